import { execFile } from "node:child_process";
import { cp } from "node:fs/promises";

/**
 * Copy the contents of `from` into the existing folder `to`, keeping modes, times, links and
 * ownership. GNU cp shares blocks where the file system can (`--reflink=auto`), so forking a big
 * work folder on btrfs or xfs costs almost nothing; without GNU cp, node's own copy is used.
 */
export async function copyTree(from: string, to: string, signal: AbortSignal): Promise<void> {
  try {
    await run("cp", ["-a", "--reflink=auto", "--", `${from}/.`, to], signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const missingOrForeign =
      (err as NodeJS.ErrnoException).code === "ENOENT" ||
      /unrecognized option|invalid option/.test(String((err as { stderr?: unknown }).stderr));
    if (!missingOrForeign) throw err;
    await cp(from, to, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true, force: true });
  }
}

function run(file: string, args: string[], signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { signal }, (err, _stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }));
      else resolve();
    });
  });
}
