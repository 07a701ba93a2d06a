import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";
import { basename, delimiter, join, relative } from "node:path";

/** Mount points the sandbox owns; nothing of the host may be mounted over or under them. */
const SANDBOX_MOUNTS = ["/work", "/inputs", "/control", "/tmp", "/proc", "/dev"];

/** System folders bound read-only (or recreated as the same symlink, on merged-/usr systems). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * What of /etc programs need (loader cache, users, name resolution, certificates, time zone),
 * and no more: the agent has no business reading the host's /etc/shadow or ssh keys.
 */
const ETC_FILES = [
  "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "hosts", "host.conf",
  "resolv.conf", "nsswitch.conf", "gai.conf", "ssl", "ca-certificates", "pki", "localtime", "timezone",
  "os-release", "mime.types", "bash.bashrc", "profile", "inputrc", "gitconfig",
].map((f) => `/etc/${f}`);

const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** The bwrap binary, when it exists here and can really make the namespaces it is asked for. */
export function findBubblewrap(): string | undefined {
  const dirs = ["/usr/bin", "/usr/local/bin", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean)];
  for (const dir of dirs) {
    const bwrap = join(dir, "bwrap");
    try {
      accessSync(bwrap, constants.X_OK);
    } catch {
      continue;
    }
    const probe = spawnSync(
      bwrap,
      ["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--new-session", "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev", "/bin/sh", "-c", "exit 0"],
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
  /** The service's data folder: hidden when it lies inside the installation (other sandboxes live there). */
  dataDir: string;
}

export interface BubblewrapCommand {
  /** bwrap and its options; the command to run inside follows. */
  prefix: string[];
  /** Where the installation and node are seen inside. */
  swarmdRoot: string;
  nodePath: string;
}

/**
 * The bwrap command line for a harness: new pid, ipc and (unless `network`) net namespaces, its
 * own session, no capabilities, read-only system and installation, and the three sandbox folders.
 * Deliberately no `--die-with-parent`: the harness must outlive the service.
 */
export function bubblewrapCommand(plan: BubblewrapPlan): BubblewrapCommand {
  const args: string[] = ["--unshare-pid", "--unshare-ipc", "--new-session", "--cap-drop", "ALL"];
  if (!plan.network) args.push("--unshare-net");
  for (const dir of SYSTEM_DIRS) {
    const stat = lstatOrUndefined(dir);
    if (stat?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (stat?.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const file of ETC_FILES) args.push("--ro-bind-try", file, file);

  // Same path inside when possible (absolute paths in node_modules keep working), else /opt.
  const clashes = (path: string) => SANDBOX_MOUNTS.some((m) => under(path, m) || under(m, path));
  const swarmdRoot = clashes(plan.swarmdRoot) ? "/opt/swarmd" : plan.swarmdRoot;
  args.push("--ro-bind", plan.swarmdRoot, swarmdRoot);
  if (under(plan.dataDir, plan.swarmdRoot)) args.push("--tmpfs", join(swarmdRoot, relative(plan.swarmdRoot, plan.dataDir)));
  let nodePath = plan.nodePath;
  if (!SYSTEM_DIRS.some((d) => under(plan.nodePath, d)) && !under(plan.nodePath, plan.swarmdRoot)) {
    nodePath = clashes(plan.nodePath) ? join("/opt/swarmd-node", basename(plan.nodePath)) : plan.nodePath;
    args.push("--ro-bind", plan.nodePath, nodePath);
  } else if (under(plan.nodePath, plan.swarmdRoot)) {
    nodePath = join(swarmdRoot, relative(plan.swarmdRoot, plan.nodePath));
  }

  args.push("--bind", plan.work, "/work", "--bind", plan.inputs, "/inputs", "--bind", plan.control, "/control");
  args.push("--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--chdir", "/work");
  return { prefix: [plan.bwrap, ...args], swarmdRoot, nodePath };
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
