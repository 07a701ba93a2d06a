import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";
import { basename, delimiter, dirname, join } from "node:path";
import { HARNESS_DIR } from "../../harness/launch.ts";
import { ARGS_FD } from "./detached-spawn.ts";
import type { SandboxUsers } from "./sandbox-users.ts";

/** Mount points the sandbox owns; nothing of the host may be mounted over or under them. */
const SANDBOX_MOUNTS = ["/work", "/inputs", "/control", "/tmp", "/proc", "/dev"];

/** System folders bound read-only (or recreated as the same symlink, on merged-/usr systems). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/**
 * The bwrap binary, when it exists here and can really make the namespaces it is asked for:
 * `only` when given (SWARM_BWRAP), else the first found in /usr/bin, /usr/local/bin, then PATH.
 */
export function findBubblewrap(only?: string): string | undefined {
  const key = only ?? "";
  const known = working.get(key);
  if (known !== undefined) return known;
  const found = probeBubblewrap(only);
  if (found !== undefined) working.set(key, found);
  return found;
}

/**
 * bwrap binaries this process saw make their namespaces: a second runtime (a restart in tests,
 * the process runtime made again) does not probe again, and a probe that a loaded machine made
 * slow or that failed once is tried a second time before isolation is called unavailable.
 */
const working = new Map<string, string>();

function probeBubblewrap(only?: string): string | undefined {
  return probeOnce(only) ?? probeOnce(only);
}

function probeOnce(only?: string): string | undefined {
  const dirs = ["/usr/bin", "/usr/local/bin", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean)];
  for (const bwrap of only !== undefined ? [only] : dirs.map((dir) => join(dir, "bwrap"))) {
    try {
      accessSync(bwrap, constants.X_OK);
    } catch {
      continue;
    }
    const probe = spawnSync(
      bwrap,
      [
        "--ro-bind",
        "/",
        "/",
        "--unshare-pid",
        "--unshare-net",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "/bin/sh",
        "-c",
        "exit 0",
      ],
      { stdio: "ignore", timeout: 10_000 },
    );
    return probe.status === 0 ? bwrap : undefined;
  }
  return undefined;
}

export interface BubblewrapPlan {
  bwrap: string;
  /** Host folders mounted at /work, /inputs and /control. */
  work: string;
  inputs: string;
  control: string;
  network: boolean;
  /** Host path of the swarmd installation and of the node binary. */
  swarmdRoot: string;
  nodePath: string;
  /** The host folder bound read-only as /etc: the few host files programs need (sandbox-etc.ts). */
  etc: string;
  /** Size of the sandbox's /tmp (a tmpfs). */
  tmpBytes: number;
  /** The sandbox's whole environment. Set inside only: no host-side process ever carries it. */
  env: Record<string, string>;
  /** Users of its own (bwrap started by root): the harness runs as `harness`, its agent's tools as `agent`. */
  users?: SandboxUsers;
}

export interface BubblewrapCommand {
  /** bwrap and its options; the command to run inside follows. */
  prefix: string[];
  /**
   * Arguments bwrap reads NUL-separated from file descriptor `ARGS_FD` (`--args`): the sandbox's
   * environment, kept off every command line (a host's /proc/<pid>/cmdline is world-readable).
   */
  fdArgs: string[];
  /** Where the installation and node are seen inside. */
  swarmdRoot: string;
  nodePath: string;
}

/**
 * A networked sandbox's descriptors: bwrap writes its child's pid to NET_INFO_FD, and the sandbox
 * starts nothing until NET_BLOCK_FD is written to (its network is set up by then). NET_HOLD_FD is
 * inherited by every sandbox process; its peer is slirp4netns's `--exit-fd`, so the stack ends with
 * the sandbox's last process.
 */
export const NET_INFO_FD = 4;
export const NET_BLOCK_FD = 5;
export const NET_HOLD_FD = 6;

/** What a harness keeps to start its agent's tools as the agent's user and to stop them (abort, timeout); nothing else. */
const HARNESS_CAPS = ["setuid", "setgid", "setpcap", "kill"];

/** What of the installation the harness needs: its build and packages, never the checkout or a data folder. */
const HARNESS_FILES = [HARNESS_DIR, "node_modules", "package.json"];

/**
 * The bwrap command line for a harness: new pid, ipc and net namespaces, its
 * own session, no capabilities, an empty environment but the sandbox's own, read-only system
 * folders, its /etc and harness files, a sized /tmp, and the three sandbox folders.
 * Deliberately no `--die-with-parent`: the harness must outlive the service.
 */
export function bubblewrapCommand(plan: BubblewrapPlan): BubblewrapCommand {
  const args: string[] = [
    "--args",
    String(ARGS_FD),
    "--unshare-pid",
    "--unshare-ipc",
    "--new-session",
    "--cap-drop",
    "ALL",
  ];
  // Always a network namespace of its own: a networked sandbox's only way out is the user-mode stack
  // the service attaches (src/sandbox/network/user-net.ts) while bwrap waits on NET_BLOCK_FD.
  args.push("--unshare-net");
  if (plan.network) args.push("--info-fd", String(NET_INFO_FD), "--block-fd", String(NET_BLOCK_FD));
  for (const dir of SYSTEM_DIRS) {
    const stat = lstatOrUndefined(dir);
    if (stat?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (stat?.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  // bwrap makes missing parents of a mount point private (0700) to root: made open here first, so a
  // sandbox's own users can reach what is mounted under them.
  const made = new Set<string>();
  const openParents = (dest: string) => {
    for (let dir = dirname(dest); dir !== "/" && !made.has(dir); dir = dirname(dir)) made.add(dir);
  };
  const mounts: string[][] = [["--ro-bind", plan.etc, "/etc"]];
  const { swarmdRoot, nodePath } = insidePaths(plan.swarmdRoot, plan.nodePath);
  for (const name of HARNESS_FILES) mounts.push(["--ro-bind-try", join(plan.swarmdRoot, name), join(swarmdRoot, name)]);
  if (!SYSTEM_DIRS.some((d) => under(plan.nodePath, d))) mounts.push(["--ro-bind", plan.nodePath, nodePath]);
  for (const mount of mounts) openParents(mount[2]!);
  for (const dir of [...made].sort()) args.push("--perms", "0755", "--dir", dir);
  for (const mount of mounts) args.push(...mount);

  args.push("--bind", plan.work, "/work", "--bind", plan.inputs, "/inputs", "--bind", plan.control, "/control");
  args.push(
    "--perms",
    "1777",
    "--size",
    String(plan.tmpBytes),
    "--tmpfs",
    "/tmp",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--chdir",
    "/work",
  );
  // The root bwrap built the mount points in is a tmpfs: read-only too, so only the sandbox's own folders take writes.
  args.push("--remount-ro", "/");
  const fdArgs = ["--clearenv", ...Object.entries(plan.env).flatMap(([name, value]) => ["--setenv", name, value])];
  if (!plan.users) return { prefix: [plan.bwrap, ...args], fdArgs, swarmdRoot, nodePath };
  // bwrap keeps only HARNESS_CAPS; setpriv then becomes the harness's user holding only them (ambient,
  // so node has them), and the harness's tools drop them all (agent-user.ts).
  for (const cap of HARNESS_CAPS) args.push("--cap-add", `CAP_${cap.toUpperCase()}`);
  const caps = HARNESS_CAPS.map((c) => `+${c}`).join(",");
  const asHarness = [
    "/usr/bin/setpriv",
    `--reuid=${plan.users.harness}`,
    `--regid=${plan.users.harness}`,
    "--clear-groups",
    `--inh-caps=-all,${caps}`,
    `--ambient-caps=-all,${caps}`,
    `--bounding-set=-all,${caps}`,
    "--nnp",
    "--",
  ];
  return { prefix: [plan.bwrap, ...args, ...asHarness], fdArgs, swarmdRoot, nodePath };
}

/**
 * Where the installation and node are seen inside: the same paths when possible (absolute paths in
 * node_modules keep working), else under /opt. A node inside the installation gets a mount of its own,
 * since only the harness files of the installation are mounted.
 */
export function insidePaths(swarmdRoot: string, nodePath: string): { swarmdRoot: string; nodePath: string } {
  const clashes = (path: string) => SANDBOX_MOUNTS.some((m) => under(path, m) || under(m, path));
  const inSystem = SYSTEM_DIRS.some((d) => under(nodePath, d));
  return {
    swarmdRoot: clashes(swarmdRoot) ? "/opt/swarmd" : swarmdRoot,
    nodePath: inSystem
      ? nodePath
      : clashes(nodePath) || under(nodePath, swarmdRoot)
        ? join("/opt/swarmd-node", basename(nodePath))
        : nodePath,
  };
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
