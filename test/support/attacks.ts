/**
 * Commands an agent's own bash tool runs to attack its sandbox's limits, shared by the runtimes'
 * containment suites (test/security/docker-containment.test.ts, test/cluster/containment.test.ts).
 */

/** Allocates 1 GiB in node, then prints `hog=<exit code>`: 137 when the OOM killer stopped it. */
export const MEMORY_HOG =
  "node -e 'const a = []; for (let i = 0; i < 128; i++) a.push(Buffer.alloc(8 << 20, 1)); console.log(\"allocated 1 GiB\")'; echo hog=$?";

/**
 * Starts 200 processes, killing each at once so the tool's own shell can fork again (bash retries a
 * failed fork for half a minute); prints `started=N refused=M`.
 */
export const PROCESS_FLOOD = `node -e '${[
  'const { spawn } = require("node:child_process");',
  "let started = 0, refused = 0;",
  "for (let i = 0; i < 200; i++) {",
  '  const child = spawn("sleep", ["60"], { stdio: "ignore" });',
  '  child.on("error", () => undefined);',
  '  if (child.pid === undefined) refused++; else { started++; child.kill("SIGKILL"); }',
  "}",
  'console.log("started=" + started + " refused=" + refused);',
].join(" ")}'`;

/** Processes started and refused, as PROCESS_FLOOD printed them. */
export function floodCounts(output: string): { started: number; refused: number } {
  const [, up = "", down = ""] = /started=(\d+) refused=(\d+)/.exec(output) ?? [];
  return { started: Number(up), refused: Number(down) };
}
