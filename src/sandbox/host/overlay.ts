import { execFile } from "node:child_process";

/**
 * Overlay mounts of the host (mount(8) and umount(8) of util-linux; only root may make them).
 * A fork child's `/work` is `lowerdir` = its fork point's frozen copy, shared by its siblings and
 * never written, and `upperdir` = its own writes.
 */
export async function mountOverlay(
  target: string,
  layers: { lower: string[]; upper?: string; scratch?: string; readOnly?: boolean },
  signal: AbortSignal,
): Promise<void> {
  const options = [`lowerdir=${layers.lower.map(escapeOption).join(":")}`];
  if (layers.upper && layers.scratch)
    options.push(`upperdir=${escapeOption(layers.upper)}`, `workdir=${escapeOption(layers.scratch)}`);
  if (layers.readOnly) options.push("ro");
  await run("mount", ["-t", "overlay", "overlay", "-o", options.join(","), "--", target], signal);
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
