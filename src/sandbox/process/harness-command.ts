import { realpathSync } from "node:fs";
import { dirname } from "node:path";
import { harnessArgv, SWARMD_ROOT } from "../../harness/launch.ts";
import { bubblewrapCommand } from "./bubblewrap.ts";
import type { SandboxLayout } from "./sandbox-layout.ts";
import type { SandboxRecord } from "./sandbox-record.ts";
import { SANDBOX_TAG_VAR } from "./sandbox-tag.ts";

const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/** How to start one sandbox's harness: argv, the complete environment, and the host cwd. */
export interface HarnessCommand {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface HarnessCommandOptions {
  record: SandboxRecord;
  layout: SandboxLayout;
  dataDir: string;
  /** The bwrap binary; required when the record asks for bubblewrap. */
  bwrap: string | undefined;
}

/**
 * The harness command for a sandbox. Inside bubblewrap the harness gets `--control /control
 * --work /work`; unisolated it gets the host folders. The environment is built from nothing:
 * a minimal PATH and HOME, the spec's env, and the sandbox tag, never the daemon's own variables.
 */
export function harnessCommand(options: HarnessCommandOptions): HarnessCommand {
  const { record, layout } = options;
  const hostNode = realpathSync(process.execPath);
  const baseEnv = (nodePath: string, home: string): Record<string, string> => {
    const nodeDir = dirname(nodePath);
    const path = SYSTEM_PATH.split(":").includes(nodeDir) ? SYSTEM_PATH : `${SYSTEM_PATH}:${nodeDir}`;
    return { PATH: path, HOME: home, LANG: "C.UTF-8", ...record.env, [SANDBOX_TAG_VAR]: record.sandboxId };
  };

  if (record.isolation === "none") {
    return {
      argv: harnessArgv({ controlDir: layout.control, workDir: layout.work, nodePath: hostNode }),
      env: { ...baseEnv(hostNode, layout.home), TMPDIR: layout.home },
      cwd: layout.work,
    };
  }
  if (options.bwrap === undefined) throw new Error("this sandbox was made with bubblewrap, which is not available any more");
  const bwrap = bubblewrapCommand({
    bwrap: options.bwrap,
    work: layout.work,
    inputs: layout.inputs,
    control: layout.control,
    network: record.network,
    swarmdRoot: SWARMD_ROOT,
    nodePath: hostNode,
    dataDir: options.dataDir,
  });
  return {
    argv: [...bwrap.prefix, ...harnessArgv({ controlDir: "/control", workDir: "/work", swarmdRoot: bwrap.swarmdRoot, nodePath: bwrap.nodePath })],
    env: baseEnv(bwrap.nodePath, "/tmp"),
    cwd: layout.work,
  };
}
