import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { findBubblewrap } from "../../src/sandbox/process/bubblewrap.ts";

/**
 * A bwrap whose sandbox makes its loopback late: a script in `dir` that runs the real bwrap under
 * strace, every `socket()` of it and of its children held `delayMs` before it runs. bwrap's child
 * opens two sockets before it sets up `lo` (one for `if_nametoindex`, then its NETLINK_ROUTE one),
 * while bwrap's parent has already written the child's pid to `--info-fd`, so the service attaches
 * the sandbox's network well before bwrap's RTM_NEWADDR: the window in which slirp4netns's
 * `--configure` once set `lo` up under bwrap (`bwrap: loopback: Failed RTM_NEWADDR`), made wide
 * enough to be hit every time. `undefined` when strace or bwrap is missing.
 */
export function slowLoopbackBwrap(dir: string, delayMs: number): string | undefined {
  const bwrap = findBubblewrap();
  const strace = spawnSync("sh", ["-c", "command -v strace"], { encoding: "utf8" }).stdout.trim();
  if (bwrap === undefined || !strace) return undefined;
  const script = join(dir, "slow-loopback-bwrap");
  writeFileSync(
    script,
    `#!/bin/sh\nexec ${strace} -f -qq -o /dev/null --seccomp-bpf -e trace=socket -e inject=socket:delay_enter=${delayMs * 1000} ${bwrap} "$@"\n`,
    { mode: 0o755 },
  );
  return script;
}
