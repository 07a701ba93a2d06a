import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A small tmpfs of the test's own, mounted on a folder it made: a disk the test can fill. */
export interface Tmpfs {
  dir: string;
  /** Fill the file system from the host side (a file `filler` in `dir`) until not one more byte fits. */
  fill(): void;
  /** Remove what `fill` wrote. */
  free(): void;
  /** Bytes still free. */
  available(): number;
  unmount(): void;
}

/**
 * Mount a tmpfs of `sizeMiB` on a new folder, or say why it cannot be done here (mounting needs
 * root, and a container may forbid it even to root): the caller skips with that reason.
 */
export function mountTmpfs(sizeMiB: number): Tmpfs | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: "mounting a tmpfs to fill needs root; run the test as root" };
  const dir = mkdtempSync(join(tmpdir(), "swarmd-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMiB}m`, "tmpfs", dir], { stdio: "pipe" });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `could not mount a tmpfs (${String((err as { stderr?: Buffer }).stderr ?? err).trim()})` };
  }
  let mounted = true;
  const unmount = () => {
    if (!mounted) return;
    mounted = false;
    execFileSync("umount", ["-l", dir], { stdio: "pipe" });
    rmSync(dir, { recursive: true, force: true });
  };
  // Never left mounted, whatever way the test process ends.
  process.once("exit", unmount);
  const filler = join(dir, "filler");
  const available = () => {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize;
  };
  return {
    dir,
    available,
    fill() {
      const fd = openSync(filler, "a");
      try {
        // Big pieces first, then ever smaller ones, until the last byte is taken.
        for (let size = 1024 * 1024; size >= 1; size = Math.floor(size / 2)) {
          const piece = Buffer.alloc(size);
          for (;;) {
            try {
              writeSync(fd, piece);
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code === "ENOSPC") break;
              throw err;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount,
  };
}
