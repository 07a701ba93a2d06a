import { join } from "node:path";
import type { InMemoryFs } from "just-bash";
import { createHarnessAgent } from "../../harness/agent.ts";
import { createHostCalls } from "../../harness/host-calls.ts";
import { CONTROL_FILES } from "../../harness/protocol.ts";
import { startHarnessServer, type HarnessServer } from "../../harness/server.ts";
import type { AgentSpec } from "../../spec/agent-spec.ts";
import type { FreezeGate } from "./freeze-gate.ts";
import { createMemoryEventLog } from "./memory-event-log.ts";
import { WORK_DIR } from "./sandbox-files.ts";
import { startSocketRelay, type SocketRelay } from "./socket-relay.ts";
import { virtualTools } from "./virtual-tools.ts";

/** The socket the memory runtime's `connect` dials: the relay in front of the harness's own. */
export const RELAY_SOCKET = "relay.sock";

export interface MemoryHarnessOptions {
  spec: AgentSpec;
  /** The sandbox's control folder (it holds the two sockets and nothing else). */
  controlDir: string;
  files: InMemoryFs;
  gate: FreezeGate;
  env: Record<string, string>;
  /** Called once when the harness ends by itself (a `shutdown` command): its sandbox is then gone. */
  onExit: () => void;
}

export interface MemoryHarness {
  /** End it as a kill would: no client hears from it again, its running turn is aborted. */
  kill(): Promise<void>;
}

/**
 * `src/harness/main.ts` run in this process: the real pi agent session, host calls and socket
 * server, with the model the spec names (the scripted one for `script`), its tools acting on the
 * in-memory files, its event log in memory and its socket behind a relay that the freeze gate
 * holds shut. Every event is logged and published only while the gate is open, so a frozen
 * harness's log does not grow and nothing of it is sent.
 */
export async function startMemoryHarness(options: MemoryHarnessOptions): Promise<MemoryHarness> {
  const { controlDir, gate } = options;
  const log = createMemoryEventLog();
  const host = createHostCalls();
  let server: HarnessServer | undefined;
  const agent = await createHarnessAgent({
    spec: options.spec,
    controlDir,
    workDir: WORK_DIR,
    agentDir: join(controlDir, "pi"), // pi is handed in-memory settings and auth: it writes nothing here
    host,
    tools: virtualTools(options.files, gate, options.env),
    emit(event, data) {
      gate.defer(() => server?.publish(log.append({ event, at: Date.now(), data })));
    },
  });
  const harnessSocket = join(controlDir, CONTROL_FILES.socket);
  let relay: SocketRelay | undefined;
  // `shutdown` ends as src/harness/main.ts does: the abort is heard, then the socket closes. A
  // kill first cuts every client off, then opens the gate so that what waits there sees its abort.
  let ended: Promise<void> | undefined;
  const end = (graceful: boolean) =>
    (ended ??= (async () => {
      if (!graceful) {
        relay?.cut();
        gate.thaw();
      }
      await agent.abort().catch(() => undefined);
      agent.dispose();
      await server?.close();
      await relay?.close();
    })());
  try {
    server = await startHarnessServer({ socketPath: harnessSocket, log, agent, host, onShutdown: () => void end(true).then(options.onExit) });
    relay = await startSocketRelay(join(controlDir, RELAY_SOCKET), harnessSocket, gate);
  } catch (err) {
    await end(false);
    throw err;
  }
  return { kill: () => end(false) };
}
