/**
 * A node:test reporter that prints, once every file has run, the slowest test files by the wall
 * time of each file's own process (what running files at once overlaps), so that a slow suite is
 * found where it is. `make test` puts it after the spec reporter (run-tests.mjs); by hand:
 *
 *   node --import tsx --test --test-reporter=spec --test-reporter-destination=stdout \
 *     --test-reporter=./test/support/slowest-files.mjs --test-reporter-destination=stdout FILES
 *
 * SWARM_TEST_SLOWEST sets how many files it lists (default 15). Plain JavaScript: node loads
 * reporters before `--import tsx` applies.
 */
import { relative } from "node:path";
import { cwd, env } from "node:process";

/** @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, nesting?: number, details?: { duration_ms?: number } } }>} source */
export default async function* slowestFiles(source) {
  // A file's own test (its process) completes with the file's path as its name; should a Node
  // report no such test, a file counts the sum of its top-level tests instead.
  const ownTest = new Map();
  const topLevel = new Map();
  for await (const event of source) {
    const data = event.data;
    const ms = data?.details?.duration_ms;
    if (!data?.file || data.nesting !== 0 || ms === undefined) continue;
    if (event.type === "test:complete" && data.name === data.file) ownTest.set(data.file, ms);
    else if ((event.type === "test:pass" || event.type === "test:fail") && data.name !== data.file)
      topLevel.set(data.file, (topLevel.get(data.file) ?? 0) + ms);
  }
  // Tests declared in a module a test file imports carry that module as their file: with files'
  // own tests at hand, only those count.
  const byFile = ownTest.size > 0 ? ownTest : topLevel;
  const count = Number(env.SWARM_TEST_SLOWEST ?? 15);
  const slowest = [...byFile]
    .map(([file, ms]) => ({ file: relative(cwd(), file), seconds: ms / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count);
  const lines = slowest.map((t) => `${t.seconds.toFixed(1).padStart(7)}s  ${t.file}`);
  yield `\nslowest ${slowest.length} of ${byFile.size} test files (wall time of each file's process):\n${lines.join("\n")}\n`;
}
