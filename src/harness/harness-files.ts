/**
 * The harness as launch.ts builds it into `dist/harness/` of the installation, shared by the build,
 * the boot that loads it and the runtimes that mount it into sandboxes.
 */
export const HARNESS_FILES = {
  /** What node runs: loads the two scripts below, each with its V8 code cache. */
  boot: "boot.cjs",
  /** The harness's own code (src/harness and what it imports but pi): everything up to a socket that answers. */
  main: "main.cjs",
  mainCache: "main.cache",
  /** pi and its packages, loaded when the agent is made (its first prompt, steer of a turn, or stats). */
  pi: "pi.cjs",
  piCache: "pi.cache",
  /** A cluster sandbox's main process: starts the harness in stdio mode and carries the daemon's stream to it (supervisor.ts). */
  supervisor: "supervisor.cjs",
  /** pi-coding-agent reads its name and version from the package.json nearest its code. */
  packageJson: "package.json",
  /** What the build read, for the freshness check. */
  inputs: "inputs.json",
} as const;

/**
 * The packages main.cjs takes from pi.cjs (every other package main.cjs imports is in it). pi.cjs
 * exports `packages`, one function per name that returns the package.
 */
export const PI_PACKAGES = ["@mariozechner/pi-coding-agent", "@mariozechner/pi-ai"] as const;

/** How main.ts imports agent-entry.ts, left as it is in main.cjs: pi.cjs holds it, beside pi's packages. */
export const AGENT_ENTRY = "./agent-entry.ts";

/** What main.cjs takes from pi.cjs: pi's packages and the agent's side of the harness. */
export const FROM_PI = [...PI_PACKAGES, AGENT_ENTRY] as const;

/**
 * The first line of main.cjs and pi.cjs names the hash of the rest; a code cache starts with the
 * hash of the script it was made from. V8 checks a cache against its own version, its flags and the
 * script's length only, so this is what keeps a cache from being used with another build's script.
 */
export const HASH_LINE_PREFIX = "//swarmd-harness ";
export const HASH_LENGTH = 64;
