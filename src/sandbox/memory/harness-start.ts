import { setTimeout as delay } from "node:timers/promises";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { errorMessage, SwarmError } from "../../errors.ts";
import { AgentSpecSchema } from "../../spec/agent-spec.ts";
import { startMemoryHarness } from "./memory-harness.ts";
import { WORK_DIR } from "./sandbox-files.ts";
import { controlDirOf, liveSandbox, type SandboxTable } from "./sandbox-table.ts";

/**
 * Start a sandbox's harness unless it runs already; a hibernated one comes back with its event log
 * and its pi session. A spec the harness would refuse fails the start as it fails a real
 * harness's: `HARNESS_START_FAILED` with the harness's own words. A start aborted while in flight
 * leaves no harness behind.
 */
export async function startSandboxHarness(
  table: SandboxTable,
  sandboxId: string,
  startDelayMs: number,
  signal: AbortSignal,
): Promise<void> {
  const sandbox = liveSandbox(table, sandboxId);
  if (sandbox.harness) return;
  if (startDelayMs > 0) await delay(startDelayMs, undefined, { signal }).catch(() => signal.throwIfAborted());
  signal.throwIfAborted();
  const spec = AgentSpecSchema.safeParse(sandbox.spec);
  if (!spec.success)
    throw new SwarmError(
      "HARNESS_START_FAILED",
      `the harness exited before its socket accepted connections: ${spec.error.message}`,
    );
  sandbox.session ??= SessionManager.inMemory(WORK_DIR);
  const harness = await startMemoryHarness({
    spec: spec.data,
    controlDir: controlDirOf(table, sandboxId),
    files: sandbox.files,
    gate: sandbox.gate,
    env: sandbox.env,
    log: sandbox.log,
    session: sandbox.session,
    onExit: () => {
      sandbox.harness = undefined;
      sandbox.gone = true;
    },
  }).catch((err: unknown) => {
    throw new SwarmError("HARNESS_START_FAILED", `the harness did not start: ${errorMessage(err)}`, { cause: err });
  });
  if (signal.aborted) {
    await harness.kill();
    throw signal.reason;
  }
  sandbox.harness = harness;
  sandbox.hibernated = false;
}
