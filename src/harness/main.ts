/**
 * The harness: the program inside every sandbox that does the agent's work. Started by a sandbox
 * runtime through its boot (`dist/harness/boot.cjs --control <dir> --work <dir>`, see launch.ts),
 * which calls `main`; reads `<control>/spec.json`, serves `<control>/harness.sock`, logs every event
 * to `<control>/events.jsonl`. The socket answers before pi is loaded: the agent is made by the
 * first command that needs it (lazy-agent.ts), and a harness that cannot make it ends. With
 * `--stdio` (a cluster sandbox's, started by its supervisor) it serves the same protocol over its
 * stdin and stdout instead, its model calls going out the same way (stdio-mode.ts): no socket.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { parseArgs } from "node:util";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { openEventLog } from "./event-log.ts";
import { createHostCalls } from "./host-calls.ts";
import { lazyAgent } from "./lazy-agent.ts";
import { CONTROL_FILES } from "./protocol.ts";
import { type HarnessServer, startHarnessServer } from "./server.ts";

export async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      control: { type: "string" },
      work: { type: "string" },
      "agent-uid": { type: "string" },
      "agent-gid": { type: "string" },
      stdio: { type: "boolean" },
      pooled: { type: "boolean" },
    },
  });
  if (!values.control || !values.work) {
    process.stderr.write("usage: harness --control <dir> --work <dir>\n");
    process.exit(2);
  }
  const controlDir = values.control;
  const workDir = values.work;
  // Given when the harness runs as a user of its own: the agent's tools then run as this one.
  let agentUser = values["agent-uid"]
    ? { uid: Number(values["agent-uid"]), gid: Number(values["agent-gid"] ?? values["agent-uid"]) }
    : undefined;

  const log = openEventLog(join(controlDir, CONTROL_FILES.eventLog));
  const host = createHostCalls();
  let server: HarnessServer | undefined;
  let dialModel: (() => Duplex) | undefined;

  const agent = lazyAgent(() =>
    import("./agent-entry.ts")
      .then(({ createHarnessAgent, applyPoolTake }) => {
        // A pooled harness (sandbox-pool.ts) starts before any agent has it: its spec, users and env
        // come with the take, written before the daemon first connects. Any harness reads its spec
        // here, as it loads pi. It is taken as it is: the daemon wrote it after validating it with
        // the spec's schema (which the harness does not carry: zod's full build cost every agent's
        // making ~40 ms), in a folder only the harness can write.
        if (values.pooled) agentUser = applyPoolTake(controlDir).agentUser ?? agentUser;
        return createHarnessAgent({
          spec: JSON.parse(readFileSync(join(controlDir, CONTROL_FILES.spec), "utf8")) as AgentSpec,
          controlDir,
          workDir,
          agentDir: join(controlDir, "pi"),
          host,
          agentUser,
          dialModel,
          emit(event, data) {
            server?.publish(log.append({ event, at: Date.now(), data }));
          },
        });
      })
      .catch((err: unknown) => {
        // As when the agent was made before the socket answered: the harness ends, and the daemon finds why in its output.
        process.stderr.write(
          `harness: cannot make the agent: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
        );
        process.exit(1);
      }),
  );

  const shutdown = async (code: number) => {
    await agent.abort().catch(() => undefined);
    await agent.dispose();
    await server?.close();
    log.close();
    process.exit(code);
  };

  process.on("SIGTERM", () => void shutdown(0));
  process.on("SIGINT", () => void shutdown(0));
  if (values.stdio) {
    // Only a cluster sandbox's harness serves over stdio: a socket's does not load its multiplexer.
    const { serveOverStdio } = await import("./stdio-mode.ts");
    const stdio = serveOverStdio({
      log,
      agent,
      host,
      onShutdown: () => void shutdown(0),
      onClosed: () => void shutdown(0),
    });
    dialModel = stdio.dialModel;
    server = stdio;
    return;
  }
  server = await startHarnessServer({
    socketPath: join(controlDir, CONTROL_FILES.socket),
    log,
    agent,
    host,
    onShutdown: () => void shutdown(0),
  });
  process.stdout.write(`harness ready on ${join(controlDir, CONTROL_FILES.socket)}\n`);
}
