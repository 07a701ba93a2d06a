import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { SessionManager } from "@mariozechner/pi-coding-agent";
import type { InMemoryFs } from "just-bash";
import { createHarnessAgent } from "../../harness/agent.ts";
import type { EventLog } from "../../harness/event-log.ts";
import { createHostCalls } from "../../harness/host-calls.ts";
import { lazyAgent } from "../../harness/lazy-agent.ts";
import { createHarnessEndpoint, type HarnessEndpoint } from "../../harness/server.ts";
import { streamPair } from "../../harness/stream-pair.ts";
import type { AgentSpec } from "../../spec/agent-spec.ts";
import type { FreezeGate } from "./freeze-gate.ts";
import { WORK_DIR } from "./sandbox-files.ts";
import { virtualTools } from "./virtual-tools.ts";

export interface MemoryHarnessOptions {
  spec: AgentSpec;
  /** The sandbox's control folder, kept in memory (its model file and gateway socket). */
  controlDir: string;
  files: InMemoryFs;
  gate: FreezeGate;
  env: Record<string, string>;
  /** The sandbox's event log: a harness started again after hibernation goes on from its last `hseq`. */
  log: EventLog;
  /** The sandbox's pi session: a harness started again goes on with the same conversation. */
  session: SessionManager;
  /** Called once when the harness ends by itself (a `shutdown` command): its sandbox is then gone. */
  onExit: () => void;
}

export interface MemoryHarness {
  /** A new connection to the harness, through the freeze gate; it replaces the current client. */
  connect(): Duplex;
  /** End it as a kill would: no client hears from it again, its running turn is aborted. */
  kill(): Promise<void>;
}

/**
 * `src/harness/main.ts` run in this process: the real pi agent session (made at the first command
 * that needs it, as there: lazy-agent.ts), host calls and connection
 * server, with the model the spec names (the scripted one for `script`), its tools acting on the
 * in-memory files, its event log in memory and its connections made in-process, through the freeze
 * gate. Every event is logged and published only while the gate is open, so a frozen harness's log
 * does not grow and nothing of it is sent; bytes on a connection cross only while it is open, so a
 * frozen harness neither hears commands nor answers, as a frozen process would.
 */
export async function startMemoryHarness(options: MemoryHarnessOptions): Promise<MemoryHarness> {
  const { controlDir, gate, log } = options;
  const host = createHostCalls();
  let endpoint: HarnessEndpoint | undefined;
  // Made at the first command that needs it, as the harness process makes its own: an agent never
  // prompted costs no pi session.
  const agent = lazyAgent(() =>
    createHarnessAgent({
      spec: options.spec,
      controlDir,
      workDir: WORK_DIR,
      agentDir: join(controlDir, "pi"), // pi is handed in-memory settings, auth and session: it writes nothing here
      host,
      tools: virtualTools(options.files, gate, options.env),
      sessionManager: options.session,
      emit(event, data) {
        gate.defer(() => endpoint?.publish(log.append({ event, at: Date.now(), data })));
      },
    }),
  );
  const connections = new Set<Duplex>(); // both ends of every connection, for a kill
  // `shutdown` ends as src/harness/main.ts does: the abort is heard, then the connection closes. A
  // kill first cuts every connection off, then opens the gate so that what waits there sees its abort.
  let ended: Promise<void> | undefined;
  const end = (graceful: boolean) =>
    (ended ??= (async () => {
      if (!graceful) {
        for (const socket of connections) socket.destroy();
        gate.thaw();
      }
      await agent.abort().catch(() => undefined);
      await agent.dispose();
      endpoint?.disconnect();
    })());
  endpoint = createHarnessEndpoint({ log, agent, host, onShutdown: () => void end(true).then(options.onExit) });
  const serving = endpoint;
  return {
    connect() {
      const [client, harnessSide] = streamPair((work) => gate.defer(work));
      for (const socket of [client, harnessSide]) {
        connections.add(socket);
        socket.once("close", () => connections.delete(socket));
      }
      // A connection made while frozen reaches the harness (and replaces its client) at the thaw.
      gate.defer(() => serving.accept(harnessSide));
      return client;
    },
    kill: () => end(false),
  };
}
