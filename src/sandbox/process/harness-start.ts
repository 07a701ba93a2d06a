import { mkdir, rm } from "node:fs/promises";
import { errorMessage, SwarmError } from "../../errors.ts";
import { stopUserNet } from "../network/user-net.ts";
import { DEFAULT_SANDBOX_LIMITS } from "../runtime.ts";
import { waitForHarness } from "../wait-for-harness.ts";
import { applyLimits } from "./cgroup-limits.ts";
import { harnessCommand } from "./harness-command.ts";
import { startDetached } from "./harness-launcher.ts";
import { launchShell } from "./launch-shell.ts";
import { freezerOf, ownedRecord, type RuntimeContext, statusOf, UNABORTABLE } from "./runtime-context.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";
import { connectSandboxNetwork } from "./sandbox-network.ts";
import { type SandboxRecord, writeRecord } from "./sandbox-record.ts";

/**
 * End an idle harness and every process of its sandbox, keeping the folder (files, control folder
 * with the event log and pi's session file, limits' cgroups): see `SandboxRuntime.hibernate`. The
 * harness writes its log and session synchronously, so nothing of an idle one is lost by the kill.
 */
export function hibernateHarness(ctx: RuntimeContext, sandboxId: string, signal: AbortSignal): Promise<void> {
  return ctx.lock(sandboxId, async () => {
    signal.throwIfAborted();
    const { layout, record } = await ownedRecord(ctx, sandboxId);
    if (record.harness === undefined) return; // never started, or hibernated already
    const status = await statusOf(record);
    if (status === "gone") throw new SwarmError("SANDBOX_GONE", `the processes of sandbox ${sandboxId} are gone`);
    if (status === "frozen")
      throw new SwarmError("SANDBOX_FROZEN", `sandbox ${sandboxId} is frozen: a paused agent is not hibernated`);
    await freezerOf(record).killAll(UNABORTABLE);
    if (record.network) await stopUserNet(sandboxId, record.userNet);
    await rm(layout.socket, { force: true });
    await writeRecord(layout, {
      ...record,
      harness: undefined,
      userNet: undefined,
      hibernatedAt: new Date().toISOString(),
    });
  });
}

/**
 * Start a sandbox's harness (see `SandboxRuntime.startHarness`). The record names the harness's
 * pid before the socket is awaited, so a service that dies meanwhile leaves a findable process;
 * a start that fails or is aborted kills what it started and leaves the sandbox as never started.
 */
export function startHarness(ctx: RuntimeContext, sandboxId: string, signal: AbortSignal): Promise<void> {
  return ctx.lock(sandboxId, async () => {
    signal.throwIfAborted();
    const { layout, record } = await ownedRecord(ctx, sandboxId);
    if (record.harness !== undefined) {
      // Already started (maybe by an earlier service, or ahead by the pool): no probe connection, it would replace the client.
      if ((await statusOf(record)) === "gone")
        throw new SwarmError("SANDBOX_GONE", `the harness of sandbox ${sandboxId} is gone`);
      return;
    }
    await launchHarness(ctx, layout, record, signal);
  });
}

/**
 * Start the harness of the sandbox at `layout` and wait for its socket; returns the record naming
 * it (written, too). `pooled`: a harness started ahead for the pool, which reads its spec when taken.
 */
export async function launchHarness(
  ctx: RuntimeContext,
  layout: SandboxLayout,
  record: SandboxRecord,
  signal: AbortSignal,
  pooled = false,
): Promise<SandboxRecord> {
  const { sandboxId } = record;
  const freezer = freezerOf(record);
  const fail = (err: unknown) =>
    new SwarmError("HARNESS_START_FAILED", `harness of sandbox ${sandboxId}: ${errorMessage(err)}`, { cause: err });

  const command = (() => {
    try {
      return harnessCommand({ record, layout, bwrap: ctx.bwrap, etc: ctx.etc, pooled });
    } catch (err) {
      throw fail(err);
    }
  })();
  // Leftovers of a start interrupted before its pid was recorded would hold the socket.
  if ((await freezer.members()).length > 0) await freezer.killAll(signal);
  await rm(layout.socket, { force: true });
  if (record.isolation === "none") await mkdir(layout.home, { recursive: true });
  signal.throwIfAborted();

  const procsFiles = await applyLimits(record.limitCgroups ?? [], record.limits ?? DEFAULT_SANDBOX_LIMITS).catch(
    (err: unknown) => {
      throw fail(new Error(`cannot set its resource limits: ${errorMessage(err)}`));
    },
  );
  const join = [...procsFiles, ...(await freezer.prepareLaunch())];
  const prefix = launchShell({ fileSizeBytes: command.fileSizeBytes, join });
  const child = await startDetached(command, prefix, layout.output, ctx.launcher).catch((err: unknown) => {
    throw fail(err);
  });
  // A woken harness carries its sandbox's own tag again, not the pool's (`tag`).
  let started: SandboxRecord = {
    ...record,
    tag: undefined,
    hibernatedAt: undefined,
    harness: { pid: child.pid, startedAt: new Date().toISOString() },
  };
  await writeRecord(layout, started);
  try {
    if (command.awaitsNetwork) {
      if (!child.child) throw new Error("a networked sandbox's launch has no pipes to set its network up over");
      started = { ...started, userNet: await connectSandboxNetwork(child.child, sandboxId, layout, signal) };
      await writeRecord(layout, started);
    }
    await waitForHarness(layout.socket, {
      exited: () => child.exited(),
      timeoutMs: ctx.harnessStartTimeoutMs,
      signal,
      outputFile: layout.output,
    });
    return started;
  } catch (err) {
    await freezerOf(started).killAll(UNABORTABLE);
    if (record.network) await stopUserNet(sandboxId, started.userNet);
    await writeRecord(layout, record);
    if (signal.aborted) throw signal.reason;
    throw fail(err);
  }
}
