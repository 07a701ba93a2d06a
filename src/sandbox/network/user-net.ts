import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, closeSync, constants, openSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { z } from "zod";
import { pollUntil } from "../poll.ts";
import { hasEnvEntry, isAliveProc, listProcs, readProc, signalPid } from "../process/proc-table.ts";
import { SYSTEM_PATH } from "../system-path.ts";

/*
 * A networked sandbox's own network: a network namespace of its own (bubblewrap's --unshare-net,
 * or a docker container with NetworkMode none) whose only way out is slirp4netns, a user-mode TCP/IP
 * stack that turns the sandbox's packets into ordinary socket calls of a host process.
 *
 * Why slirp4netns and not pasta: slirp4netns has `--disable-host-loopback`, a documented switch that
 * refuses the host-loopback alias (10.0.2.2 → 127.0.0.1), and it gives the sandbox a fixed private
 * addressing (10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3) that never overlaps the host's own
 * addresses, so the prohibit routes below cannot shadow the sandbox's own address. pasta copies the
 * host's addresses and routes into the namespace by default and maps the gateway to the host, the
 * opposite of what is wanted here. slirp4netns also confines itself (`--enable-sandbox`: its own
 * mount namespace with nothing in it, `--enable-seccomp`), which matters because it parses packets
 * an agent chose.
 *
 * What stays reachable: every address the host itself could connect to, except the host's own
 * addresses (read when the network is attached; an address the host gains later is not blocked) and
 * slirp's host alias. DNS at 10.0.2.3 is forwarded by slirp4netns to the host's resolver from
 * /etc/resolv.conf, even when that is a loopback resolver: accepted, a resolver answers names only.
 * No IPv6 egress (no `--enable-ipv6`). Loopback addresses (127/8, ::1) are not routed: inside the
 * namespace they are the sandbox's own `lo`, never the host's.
 */

/** The slirp4netns of one sandbox, as kept in its record. */
export const UserNetProcessSchema = z.object({
  pid: z.number().int().positive(),
  /** Field 22 of /proc/<pid>/stat: with the pid, names this process and no later one with the same pid. */
  startTime: z.string(),
});
export type UserNetProcess = z.infer<typeof UserNetProcessSchema>;

/** slirp4netns's fixed host alias (its gateway); prohibited too, on top of `--disable-host-loopback`. */
export const SLIRP_HOST_ALIAS = "10.0.2.2";
/** The sandbox's side: slirp4netns's tap device, its recommended guest address (10.0.2.0/24), and the MTU it is told. */
const TAP = "tap0";
const SLIRP_GUEST = "10.0.2.100";
const SLIRP_BROADCAST = "10.0.2.255";
const SLIRP_MTU = 65520;

/**
 * Every slirp4netns swarmd starts carries `SWARMD_USER_NET=<sandboxId>` in its environment, so
 * `stopUserNet` finds it even when the service died before recording its pid.
 */
const USER_NET_TAG_VAR = "SWARMD_USER_NET";
const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;

/** Absolute path of a system command, or `undefined` (the service's PATH may lack the sbin folders). */
function findCommand(name: string): string | undefined {
  for (const dir of SYSTEM_PATH.split(":")) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  return undefined;
}

const TOOLS = ["slirp4netns", "nsenter", "ip"] as const;

/** Why networked sandboxes cannot be made here (a missing command), or `undefined` when they can. */
export function userNetUnavailable(): string | undefined {
  const missing = TOOLS.filter((t) => findCommand(t) === undefined);
  return missing.length === 0
    ? undefined
    : `a networked sandbox needs ${missing.join(", ")} on the host (apt-get install -y slirp4netns iproute2 util-linux)`;
}

function tool(name: (typeof TOOLS)[number]): string {
  const path = findCommand(name);
  if (path === undefined) throw new Error(userNetUnavailable());
  return path;
}

/**
 * The host's own addresses, IPv4 and IPv6, loopback ones left out (see above). Link-local IPv6
 * addresses are included: a prohibit route for one costs nothing.
 */
export function hostAddresses(): string[] {
  const all = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  const addresses = all.filter((i) => !i.internal && !isLoopback(i.address)).map((i) => i.address.replace(/%.*$/, ""));
  return [...new Set(addresses)];
}

function isLoopback(address: string): boolean {
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** Refuse to touch the service's own namespace: a reused pid must never get the host a tap0 or routes. */
function assertForeignNetns(targetPid: number): void {
  const target = statSync(`/proc/${targetPid}/ns/net`);
  const own = statSync("/proc/self/ns/net");
  if (target.ino === own.ino && target.dev === own.dev)
    throw new Error(`process ${targetPid} shares the service's network namespace`);
}

/** A child's exit as one line, for error messages. */
function ended(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(`exited (${child.exitCode ?? child.signalCode})`);
    child.once("exit", (code, sig) => resolve(`exited (${code ?? sig})`));
    child.once("error", (err) => resolve(`failed to start: ${err.message}`));
  });
}

/**
 * Add `prohibit` routes for `addresses` (and slirp's host alias) in the network namespace of
 * `targetPid`, from the host side. A connect to any of them then fails at once with EACCES, and the
 * sandbox (no CAP_NET_ADMIN over its namespace) cannot remove them. Throws when any route fails.
 */
export async function blockHostAddresses(targetPid: number, addresses: string[]): Promise<void> {
  const ipv6 = (() => {
    try {
      accessSync("/proc/sys/net/ipv6", constants.R_OK);
      return true;
    } catch {
      return false; // a kernel without IPv6 carries no IPv6 packets at all
    }
  })();
  const targets = [SLIRP_HOST_ALIAS, ...addresses].filter((a) => ipv6 || !a.includes(":"));
  const batch = targets.map((a) => `route replace prohibit ${a}/${a.includes(":") ? 128 : 32}`);
  await ipBatch(targetPid, batch, "blocking the host's addresses in the sandbox's namespace");
}

/**
 * What slirp4netns's `--configure` would do to `tap0` (up, MTU, no multicast, its recommended address
 * 10.0.2.100/24, default route via its gateway), done here instead, so that nothing but bubblewrap (or docker) ever
 * touches the namespace's `lo`. `--configure` also sets `lo` up: the kernel then gives it 127.0.0.1/8
 * on its own, and a bwrap that has not made its loopback yet fails on it (its RTM_NEWADDR asks
 * NLM_F_EXCL and gets EEXIST, which bwrap 0.8 reports with a stale errno as
 * `bwrap: loopback: Failed RTM_NEWADDR: No child processes`). bwrap writes its child's pid to
 * `--info-fd` before that child makes its loopback, so the two would run at the same time.
 */
async function configureTap(targetPid: number): Promise<void> {
  await ipBatch(
    targetPid,
    [
      `link set dev ${TAP} multicast off mtu ${SLIRP_MTU} up`,
      `addr add ${SLIRP_GUEST}/24 broadcast ${SLIRP_BROADCAST} dev ${TAP}`,
      `route add default via ${SLIRP_HOST_ALIAS} dev ${TAP}`,
    ],
    `configuring ${TAP} in the sandbox's namespace`,
  );
}

/** Run `ip -batch` in the network namespace of `targetPid` (never the service's own); throws unless every line succeeded. */
async function ipBatch(targetPid: number, lines: string[], what: string): Promise<void> {
  assertForeignNetns(targetPid);
  const child = spawn(tool("nsenter"), [`--net=/proc/${targetPid}/ns/net`, "--", tool("ip"), "-batch", "-"], {
    stdio: ["pipe", "ignore", "pipe"],
    env: { PATH: SYSTEM_PATH },
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  child.stdin?.on("error", () => undefined); // an ip that died early: its exit says why
  child.stdin?.end(lines.map((l) => `${l}\n`).join(""));
  const how = await ended(child);
  if (child.exitCode !== 0) throw new Error(`${what} ${how}: ${stderr.trim()}`);
}

export interface AttachOptions {
  sandboxId: string;
  /** A process in the sandbox's network namespace (a host pid). */
  targetPid: number;
  /** Host file for slirp4netns's output: outside anything the sandbox can see. */
  logFile: string;
  /**
   * One end of a socket pair whose other end only the sandbox's processes hold: slirp4netns exits
   * on its own once they are all gone (`--exit-fd`), so a sandbox killed behind the service's back
   * leaves no slirp4netns behind. Docker sandboxes have none (the engine starts their processes).
   */
  exitFd?: Readable;
  signal: AbortSignal;
}

/**
 * Give the sandbox's namespace its way out: first prohibit the host's addresses, then start
 * slirp4netns, detached (its own session, unreferenced: it outlives a service restart like the
 * harness), and once it is ready (its `tap0` exists, still down and without an address), configure
 * `tap0` (address, default route). The order means the namespace never has egress without the
 * prohibit routes, whatever moment the service dies at. slirp4netns does not configure the namespace
 * itself (no `--configure`): see `configureTap`. On failure nothing is left running. The caller
 * records the result and calls `stopUserNet` on close.
 */
export async function attachUserNet(options: AttachOptions): Promise<UserNetProcess> {
  const { targetPid, signal } = options;
  signal.throwIfAborted();
  await blockHostAddresses(targetPid, hostAddresses());
  signal.throwIfAborted();
  assertForeignNetns(targetPid);

  const args = [
    `--mtu=${SLIRP_MTU}`,
    "--disable-host-loopback",
    "--enable-sandbox",
    "--enable-seccomp",
    "--ready-fd=3",
  ];
  if (options.exitFd) args.push("--exit-fd=4");
  const log = openSync(options.logFile, "w", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(tool("slirp4netns"), [...args, String(targetPid), TAP], {
      detached: true,
      stdio: ["ignore", log, log, "pipe", ...(options.exitFd ? [options.exitFd] : [])],
      env: { PATH: SYSTEM_PATH, [USER_NET_TAG_VAR]: options.sandboxId },
    });
  } finally {
    closeSync(log);
  }
  const ready = child.stdio[3] as Readable;
  try {
    const outcome = await new Promise<string | undefined>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      const finish = (value: string | undefined) => {
        cleanup();
        resolve(value);
      };
      const onAbort = () => {
        cleanup();
        reject(signal.reason);
      };
      const timer = setTimeout(() => finish(`gave no ready signal within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
      signal.addEventListener("abort", onAbort, { once: true });
      ready.once("data", () => finish(undefined));
      void ended(child).then(finish);
    });
    if (outcome !== undefined) throw new Error(`slirp4netns ${outcome}: ${readLogTail(options.logFile)}`);
    signal.throwIfAborted();
    await configureTap(targetPid);
    if (child.pid === undefined) throw new Error("slirp4netns has no pid");
    const startTime = await startTimeOf(child.pid);
    if (startTime === undefined) throw new Error(`slirp4netns ${await ended(child)}: ${readLogTail(options.logFile)}`);
    return { pid: child.pid, startTime };
  } catch (err) {
    if (child.pid !== undefined) killQuietly(child.pid);
    throw err;
  } finally {
    ready.destroy();
    child.unref();
  }
}

/**
 * Kill the sandbox's slirp4netns (the recorded one, and any other tagged with the sandbox: one
 * started by a service that died before recording it) and resolve once none is alive. Idempotent.
 */
export async function stopUserNet(sandboxId: string, recorded?: UserNetProcess): Promise<void> {
  const find = async (): Promise<number[]> => {
    const pids = new Set(await taggedUserNets(sandboxId));
    if (recorded !== undefined && (await startTimeOf(recorded.pid)) === recorded.startTime) pids.add(recorded.pid);
    return [...pids];
  };
  await pollUntil(
    async () => {
      const pids = await find();
      pids.forEach(killQuietly);
      return pids.length === 0 ? true : undefined;
    },
    { timeoutMs: STOP_TIMEOUT_MS, intervalMs: 10, what: `the slirp4netns of sandbox ${sandboxId} to end` },
  );
}

/**
 * Live slirp4netns processes tagged with the sandbox (zombies are over and not counted). Only
 * processes in the daemon's own pid namespace count: the daemon starts slirp4netns on the host,
 * while every sandboxed process lives in a pid namespace of its own, so an agent that tags its
 * processes with a neighbour's id cannot make that neighbour's close chase them.
 */
export async function taggedUserNets(sandboxId: string): Promise<number[]> {
  const ownPidNs = pidNamespaceOf("self");
  const live = (await listProcs()).filter((e) => isAliveProc(e) && pidNamespaceOf(String(e.pid)) === ownPidNs);
  const tagged = await Promise.all(live.map((e) => hasEnvEntry(e.pid, `${USER_NET_TAG_VAR}=${sandboxId}`)));
  return live.filter((_, i) => tagged[i]).map((e) => e.pid);
}

/** The pid namespace of a process (`self` or a pid), or `undefined` when it is gone. */
function pidNamespaceOf(pid: string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

/** Start time of a live (not zombie) process, or `undefined`. */
async function startTimeOf(pid: number): Promise<string | undefined> {
  const entry = await readProc(pid);
  return isAliveProc(entry) ? entry.startTime : undefined;
}

const killQuietly = (pid: number) => signalPid(pid, "SIGKILL");

function readLogTail(file: string): string {
  try {
    return readFileSync(file, "utf8").trim().split("\n").slice(-5).join(" | ") || "no output";
  } catch {
    return "no output";
  }
}
