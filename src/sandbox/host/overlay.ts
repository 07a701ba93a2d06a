import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";

/**
 * Overlay mounts of the host (mount(8) and umount(8) of util-linux; only root may make them).
 * A fork child's `/work` is `lowerdir` = its fork point's frozen copy, shared by its siblings and
 * never written, and `upperdir` = its own writes.
 */
export async function mountOverlay(target: string, layers: OverlayLayers, signal: AbortSignal): Promise<void> {
  await run("mount", ["-t", "overlay", "overlay", "-o", optionsOf(layers), "--", target], signal);
}

/**
 * Several overlay mounts made by one `mount` process: `mount -a` over a table of them written to
 * `table` (util-linux's `--fstab`), each mount a system call of that process rather than a process
 * of its own. Where a path holds a character a table would have to escape, one shell runs `mount`
 * for each instead. Either way it stops at the first that fails.
 */
export async function mountOverlays(
  mounts: ReadonlyArray<{ target: string; layers: OverlayLayers }>,
  table: string,
  signal: AbortSignal,
): Promise<void> {
  if (mounts.length === 0) return;
  const lines = mounts.map(({ target, layers }) => ({ target, options: optionsOf(layers) }));
  if (lines.every(({ target, options }) => PLAIN.test(target) && PLAIN.test(options))) {
    await writeFile(table, lines.map(({ target, options }) => `overlay ${target} overlay ${options} 0 0\n`).join(""), {
      mode: 0o600,
    });
    await run("mount", ["-a", "-T", table], signal);
    return;
  }
  const script = 'while [ "$#" -gt 0 ]; do mount -t overlay overlay -o "$1" -- "$2" || exit 1; shift 2; done';
  await run("/bin/sh", ["-c", script, "sh", ...lines.flatMap(({ target, options }) => [options, target])], signal);
}

/** What a mount table holds without escapes: no space, tab, newline, `#` or backslash. */
const PLAIN = /^[^\s#\\]+$/;

/** The layers of one overlay mount: read-only ones (lowest last), and the writable one with its work folder. */
export interface OverlayLayers {
  lower: string[];
  upper?: string;
  scratch?: string;
  readOnly?: boolean;
}

function optionsOf(layers: OverlayLayers): string {
  const options = [`lowerdir=${layers.lower.map(escapeOption).join(":")}`];
  if (layers.upper && layers.scratch)
    options.push(`upperdir=${escapeOption(layers.upper)}`, `workdir=${escapeOption(layers.scratch)}`);
  if (layers.readOnly) options.push("ro");
  return options.join(",");
}

/** Unmount `target`; resolves when it was not mounted. A mount still in use is detached lazily. */
export async function unmount(target: string): Promise<void> {
  try {
    await run("umount", ["--", target], AbortSignal.timeout(30_000));
  } catch (err) {
    const text = String((err as { stderr?: unknown }).stderr ?? "");
    if (/not mounted|no mount point|not found|No such file/i.test(text)) return;
    if (/busy/i.test(text)) {
      await run("umount", ["-l", "--", target], AbortSignal.timeout(30_000));
      return;
    }
    throw err;
  }
}

/** Commas and colons separate overlay options and layers: escaped in a path, as the kernel reads them. */
const escapeOption = (path: string) => path.replace(/[\\,:]/g, (c) => `\\${c}`);

function run(file: string, args: string[], signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { signal, timeout: 60_000 }, (err, _stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }));
      else resolve();
    });
  });
}
