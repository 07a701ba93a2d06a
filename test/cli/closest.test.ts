import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { closest, editDistance } from "../../src/closest.ts";

describe("closest names (did you mean …?)", () => {
  it("counts edits", () => {
    assert.deepEqual(
      [editDistance("", ""), editDistance("abc", ""), editDistance("kitten", "sitting"), editDistance("gpt5", "gpt-5")],
      [0, 3, 3, 1],
    );
  });

  it("names the nearest first, keeps near ones and those containing the name, and leaves far ones out", () => {
    const flags = ["json", "url", "help", "max-tokens", "max-cost-usd", "max-agents"];
    assert.deepEqual(closest("max-tokenz", flags), ["max-tokens"]);
    assert.deepEqual(closest("max-agent", flags), ["max-agents", "max-tokens"], "nearest first");
    assert.deepEqual(closest("JSN", flags, 1), ["json"]);
    assert.deepEqual(closest("bogus", flags), []);
    assert.deepEqual(closest("m", ["o1", "o3"]), [], "one letter is near nothing two edits away");
    assert.deepEqual(closest("sonnet", ["claude-sonnet-4-5", "gpt-4o", "claude-haiku"]), ["claude-sonnet-4-5"]);
    assert.deepEqual(
      closest("b", [{ id: "a" }, { id: "b" }], 3, (x) => x.id),
      [{ id: "b" }, { id: "a" }],
      "items compared by their key",
    );
  });
});
