/**
 * The one host-side shell a harness launch starts with, before bwrap (or `env -i` unisolated): it
 * sets the file size limit (RLIMIT_FSIZE, soft and hard), moves itself into each of the sandbox's
 * cgroups, then execs the rest, so every process the harness ever starts inherits both. A step
 * that fails stops the start (exit 111): a harness never runs outside its limits. It took two
 * shells and `prlimit` before (three execs per start, most of the chain's own cost in a burst).
 */
export function launchShell(options: { fileSizeBytes: number; join: readonly string[] }): string[] {
  // `ulimit -f` counts 512-byte blocks (POSIX; dash, and bash as `sh`), and sets both limits.
  const blocks = Math.floor(options.fileSizeBytes / 512);
  return [
    "/bin/sh",
    "-c",
    'ulimit -f "$1" || exit 111; shift; while [ "$1" != -- ]; do echo $$ > "$1" || exit 111; shift; done; shift; exec "$@"',
    "swarmd-launch",
    String(blocks),
    ...options.join,
    "--",
  ];
}
