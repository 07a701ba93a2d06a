/**
 * The approval policy as an agent would attack it: arguments built to make a `match` pattern
 * backtrack without end (the daemon tests `spawn_agent` and `await_result` calls itself), arguments
 * too large to test, a call id reused for another call, and policies that grow past their limit.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { permissionId } from "../../actors/run/permissions.ts";
import { AgentSpecSchema } from "../../src/spec/agent-spec.ts";
import { combinePolicies, MAX_APPROVE_RULES, needsApproval } from "../../src/spec/approve.ts";

describe("approval policy", () => {
  it("a rule names a tool, all of its calls or those whose arguments match; '*' names every call", () => {
    assert.equal(needsApproval([{ tool: "bash" }], "bash", { command: "ls" }), true);
    assert.equal(needsApproval([{ tool: "bash" }], "write", { path: "x" }), false);
    assert.equal(
      needsApproval([{ tool: "bash", match: "rm |git push" }], "bash", { command: "git push origin" }),
      true,
    );
    assert.equal(needsApproval([{ tool: "bash", match: "rm |git push" }], "bash", { command: "git status" }), false);
    assert.equal(needsApproval(["*"], "read", { path: "/work/a" }), true);
    assert.equal(needsApproval([], "bash", {}), false);
  });

  it("a pattern that backtracks without end on what the agent sent counts as a match, and returns at once", () => {
    const evil = { spec: { name: "a".repeat(40) } };
    const started = process.hrtime.bigint();
    assert.equal(needsApproval([{ tool: "spawn_agent", match: "(a+)+b" }], "spawn_agent", evil), true);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    // Not a speed target: without the limit this call does not return for hours.
    assert.ok(ms < 5_000, `returned after ${ms} ms`);
  });

  it("arguments too large to test count as a match", () => {
    assert.equal(
      needsApproval([{ tool: "write", match: "^never$" }], "write", { content: "x".repeat(300 * 1024) }),
      true,
    );
  });

  it("a request id names the agent, the call id and the call: the same call sent again finds it, another call under that id does not", () => {
    const a = permissionId("a_1", "call-1", "bash", { command: "ls" });
    assert.equal(permissionId("a_1", "call-1", "bash", { command: "ls" }), a);
    assert.notEqual(permissionId("a_1", "call-1", "bash", { command: "rm -rf /work" }), a);
    assert.notEqual(permissionId("a_2", "call-1", "bash", { command: "ls" }), a);
    assert.match(a, /^p_[0-9a-f]{24}$/);
  });

  it("a child's policy is its parent's and its own, each rule once; '*' covers all; past the limit it is refused", () => {
    assert.deepEqual(combinePolicies([{ tool: "bash" }], [{ tool: "bash" }, { tool: "write" }]), {
      rules: [{ tool: "bash" }, { tool: "write" }],
    });
    assert.deepEqual(combinePolicies([{ tool: "bash" }], ["*"]), { rules: ["*"] });
    const many = Array.from({ length: MAX_APPROVE_RULES }, (_, i) => ({ tool: "bash", match: `x${i}` }));
    const own = [{ tool: "bash", match: "extra" }];
    const combined = combinePolicies(many, own);
    assert.ok("problem" in combined && /more than 64/.test(combined.problem));
  });

  it("the spec refuses a bad rule with a message that names it", () => {
    const problems = (approve: unknown) => {
      const parsed = AgentSpecSchema.safeParse({ name: "x", script: [], approve });
      return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    };
    assert.deepEqual(problems([{ tool: "bash", match: "(" }]), [
      "approve.0.match: must be a valid JavaScript regular expression",
    ]);
    assert.deepEqual(problems([{ tool: "curl" }]), [
      "approve.0.tool: must be one of bash, read, write, edit, spawn_agent, await_result",
    ]);
    assert.deepEqual(problems(["all"]), ['approve.0: must be "*" or an object {tool, match?}']);
    assert.equal(problems(Array.from({ length: MAX_APPROVE_RULES + 1 }, () => "*")).length, 1);
    assert.deepEqual(problems([{ tool: "bash", match: "rm " }, "*"]), []);
  });
});
