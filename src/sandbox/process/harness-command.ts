import { realpathSync } from "node:fs";
import { dirname } from "node:path";
import { harnessArgv, SWARMD_ROOT } from "../../harness/launch.ts";
import { DEFAULT_SANDBOX_LIMITS } from "../runtime.ts";
import { SYSTEM_PATH } from "../system-path.ts";
import { bubblewrapCommand, insidePaths } from "./bubblewrap.ts";
import type { SandboxEtc } from "./sandbox-etc.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";
import type { SandboxRecord } from "./sandbox-record.ts";
import { SANDBOX_TAG_VAR } from "./sandbox-tag.ts";

/** How to start one sandbox's harness. */
export interface HarnessCommand {
  argv: string[];
  /** The environment of the host-side launch processes: fixed, nothing of a spec's or the daemon's. */
  hostEnv: Record<string, string>;
  /** The largest file any of the sandbox's processes may write (RLIMIT_FSIZE, set by the launch shell). */
  fileSizeBytes: number;
  /** NUL-separated arguments for bwrap's `--args` descriptor (`ARGS_FD`); absent when unisolated. */
  fdArgs?: string[];
  cwd: string;
  /** bwrap waits on `NET_BLOCK_FD` until the sandbox's network is attached (`network: true`). */
  awaitsNetwork?: boolean;
}

export interface HarnessCommandOptions {
  record: SandboxRecord;
  layout: SandboxLayout;
  /** The bwrap binary; required when the record asks for bubblewrap. */
  bwrap: string | undefined;
  /** The sandboxes' /etc; required when the record asks for bubblewrap. */
  etc: SandboxEtc | undefined;
  /** A harness started ahead for the pool (sandbox-pool.ts): it reads its spec when taken. */
  pooled?: boolean;
}

/**
 * The harness command for a sandbox. Inside bubblewrap the harness gets `--control /control
 * --work /work` and an environment built from nothing inside the sandbox (a minimal PATH and
 * HOME, the spec's env, the sandbox tag); the host-side processes that start it (the launch
 * shell that sets its file size limit and joins its cgroups, bwrap) get a fixed environment, so
 * no spec variable such as `LD_PRELOAD` ever reaches a host-side process. Unisolated, the harness
 * gets the host folders and its environment through `env -i`, the last host-side step.
 */
export function harnessCommand(options: HarnessCommandOptions): HarnessCommand {
  const { record, layout } = options;
  const limits = record.limits ?? DEFAULT_SANDBOX_LIMITS;
  const hostNode = realpathSync(process.execPath);
  const pathWith = (nodePath: string) => {
    const nodeDir = dirname(nodePath);
    return SYSTEM_PATH.split(":").includes(nodeDir) ? SYSTEM_PATH : `${SYSTEM_PATH}:${nodeDir}`;
  };
  const sandboxEnv = (nodePath: string, home: string): Record<string, string> => ({
    PATH: pathWith(nodePath),
    HOME: home,
    LANG: "C.UTF-8",
    ...record.env,
    [SANDBOX_TAG_VAR]: record.sandboxId,
  });
  const hostEnv = { PATH: SYSTEM_PATH, LANG: "C.UTF-8", [SANDBOX_TAG_VAR]: record.sandboxId };
  // No single file may outgrow the sandbox's disk quota (the size watch catches many small ones).
  const fileSizeBytes = limits.diskMiB * 1024 * 1024;

  if (record.isolation === "none") {
    const env = { ...sandboxEnv(hostNode, layout.home), TMPDIR: layout.home };
    return {
      argv: [
        "/usr/bin/env",
        "-i",
        ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
        ...harnessArgv({ controlDir: layout.control, workDir: layout.work, nodePath: hostNode }),
      ],
      hostEnv,
      fileSizeBytes,
      cwd: layout.work,
    };
  }
  if (options.bwrap === undefined || options.etc === undefined)
    throw new Error("this sandbox was made with bubblewrap, which is not available any more");
  const bwrap = bubblewrapCommand({
    bwrap: options.bwrap,
    work: layout.work,
    inputs: layout.inputs,
    control: layout.control,
    etc: options.etc.current(),
    network: record.network,
    swarmdRoot: SWARMD_ROOT,
    nodePath: hostNode,
    tmpBytes: limits.tmpMiB * 1024 * 1024,
    env: sandboxEnv(insidePaths(SWARMD_ROOT, hostNode).nodePath, "/tmp"),
    users: record.users,
  });
  const agentUser = record.users && { uid: record.users.agent, gid: record.users.agent };
  return {
    argv: [
      ...bwrap.prefix,
      ...harnessArgv({
        controlDir: "/control",
        workDir: "/work",
        swarmdRoot: bwrap.swarmdRoot,
        nodePath: bwrap.nodePath,
        agentUser,
        pooled: options.pooled,
      }),
    ],
    hostEnv,
    fileSizeBytes,
    fdArgs: bwrap.fdArgs,
    cwd: layout.work,
    awaitsNetwork: record.network,
  };
}
