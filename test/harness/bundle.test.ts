import assert from "node:assert/strict";
import { readFileSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { ensureHarnessBundle, SWARMD_ROOT } from "../../src/harness/launch.ts";

it("rebuilds the harness bundle only when a file it was built from changed, imports outside src/harness included", () => {
  const bundle = ensureHarnessBundle();
  const built = statSync(bundle).mtimeMs;
  assert.equal(statSync(ensureHarnessBundle()).mtimeMs, built, "fresh: not rebuilt");

  const inputs = JSON.parse(readFileSync(join(SWARMD_ROOT, "dist/harness.inputs.json"), "utf8")) as string[];
  assert.ok(inputs.includes("src/harness/main.ts"));
  assert.ok(inputs.includes("src/spec/agent-spec.ts"), "the spec schema the harness imports is one of its inputs");
  // Mark an input as changed after the build (its content stays as it is).
  const input = join(SWARMD_ROOT, "src/spec/agent-spec.ts");
  const later = new Date(built + 1);
  utimesSync(input, later, later);
  assert.ok(statSync(ensureHarnessBundle()).mtimeMs > built, "stale: rebuilt");
});
