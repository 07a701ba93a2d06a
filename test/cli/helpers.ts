import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";

export interface SwarmRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `swarm` bin as a user would (the file itself, which picks swarmd's Node 24), with
 * only the environment given here (plus PATH).
 */
export function swarm(args: string[], env: Record<string, string>, input?: string): Promise<SwarmRun> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      join(SWARMD_ROOT, "bin/swarm.js"),
      args,
      {
        cwd: SWARMD_ROOT,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
        timeout: 90_000,
      },
      (err, stdout, stderr) => {
        const code = err && typeof err.code === "number" ? err.code : err ? -1 : 0;
        if (err && code === -1) return reject(err);
        resolve({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
    else child.stdin?.end();
  });
}

/** `12.3k tok $0.0123`, or `<$0.0001` for a spend too small for four decimals: a spend as the tree shows it. */
export const SPENT = String.raw`\d+(\.\d)?[kM]? tok <?\$\d+\.\d{2,4}`;

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A root that spawns two children through its own `spawn_agent` tool, then ends once they have. */
export const FAMILY_SPEC = {
  name: "root",
  script: [
    { tool: "spawn_agent", args: { spec: { name: "kid-a", script: [] }, prompt: "hello from a" } },
    { tool: "spawn_agent", args: { spec: { name: "kid-b", script: [] }, prompt: "hello from b" } },
    { text: "spawned both" },
  ],
};

/** `runCli` in this process with captured output: the same commands, without a process start each. */
export async function swarmInProcess(args: string[], env: Record<string, string>): Promise<SwarmRun> {
  const { runCli } = await import("../../src/cli/main.ts");
  let stdout = "";
  let stderr = "";
  const io = {
    out: (t: string) => {
      stdout += t;
    },
    err: (t: string) => {
      stderr += t;
    },
    isTTY: false,
  };
  const code = await runCli(args, { env, io });
  return { code, stdout, stderr };
}
