import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { attachUserNet, type UserNetProcess } from "../network/user-net.ts";
import { NET_BLOCK_FD, NET_HOLD_FD, NET_INFO_FD } from "./bubblewrap.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";

const INFO_TIMEOUT_MS = 10_000;

/** Host file of the sandbox's slirp4netns output: in the sandbox folder, not in what it mounts. */
export const userNetLog = (layout: SandboxLayout) => join(layout.root, "user-net.log");

/**
 * Attach a networked sandbox's user-mode network while its bwrap waits (the launcher gave it
 * `NET_INFO_FD`, `NET_BLOCK_FD` and `NET_HOLD_FD`), then let the sandbox start. So the harness never
 * runs before its network is there: no window with a half-made network, and none with the host's.
 *
 * slirp4netns runs outside the sandbox's cgroup: it is the host's side of the sandbox's network,
 * so freezing the sandbox leaves it running (connections stall, nothing is lost), its memory is the
 * service's to bound, and a sandbox whose harness died is not kept "running" by it. It still cannot
 * outlive the sandbox: its `--exit-fd` is the peer of `NET_HOLD_FD`, which only the sandbox's
 * processes hold. On failure the sandbox may go on without any way out; the caller kills it.
 */
export async function connectSandboxNetwork(
  child: ChildProcess,
  sandboxId: string,
  layout: SandboxLayout,
  signal: AbortSignal,
): Promise<UserNetProcess> {
  const fds: readonly unknown[] = child.stdio;
  const info = fds[NET_INFO_FD] as Readable | null | undefined;
  const block = fds[NET_BLOCK_FD] as Writable | null | undefined;
  const hold = fds[NET_HOLD_FD] as Readable | null | undefined;
  if (!info || !block || !hold) throw new Error("the sandbox was started without its network descriptors");
  try {
    const targetPid = await childPidOf(info, signal);
    const userNet = await attachUserNet({ sandboxId, targetPid, logFile: userNetLog(layout), exitFd: hold, signal });
    block.on("error", () => undefined);
    block.end("1", () => block.destroy());
    return userNet;
  } catch (err) {
    block.destroy();
    throw err;
  } finally {
    // slirp4netns has its own copy of `hold` now; ours must not keep it alive.
    info.destroy();
    hold.destroy();
  }
}

/** The pid of the sandbox's first process, from bwrap's `--info-fd` JSON. */
function childPidOf(info: Readable, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = "";
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      info.removeAllListeners("data");
      info.removeAllListeners("end");
    };
    const fail = (err: unknown) => {
      cleanup();
      reject(err);
    };
    const onAbort = () => fail(signal.reason);
    const timer = setTimeout(
      () => fail(new Error(`bwrap did not report its child within ${INFO_TIMEOUT_MS} ms`)),
      INFO_TIMEOUT_MS,
    );
    signal.addEventListener("abort", onAbort, { once: true });
    info.setEncoding("utf8");
    info.on("data", (chunk: string) => {
      text += chunk;
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
      if (pid === undefined) return;
      cleanup();
      resolve(Number(pid));
    });
    info.on("end", () => fail(new Error(`bwrap ended before reporting its child${text ? `: ${text}` : ""}`)));
    info.on("error", fail);
  });
}
