/**
 * Which rows the console's tree shows (src/console/tree-rows.ts), on a view made from a snapshot as
 * the page makes it: folds, search and filters, what a collapsed row hides, and the agent view's
 * `toolErrors` read whether the daemon sends it or not.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { snapshotView } from "../../src/console/run-state.ts";
import { NO_FILTER, parents, subtreeStates, toolErrors, treeRows } from "../../src/console/tree-rows.ts";
import type { AgentState, AgentView, Outcome } from "../../src/swarm-api.ts";
import { emptyUsage } from "../../src/views/run-view.ts";

const agent = (
  agentId: string,
  parentAgentId: string | null,
  specName: string,
  state: AgentState,
  extra: Partial<AgentView> & { toolErrors?: number } = {},
): AgentView =>
  // A cast: `toolErrors` is on the agent view once the daemon sends it, and these views carry it or not.
  ({
    agentId,
    runId: "r_1",
    parentAgentId,
    depth: 0,
    spawnIndex: 0,
    state,
    specName,
    sandboxId: null,
    createdAt: 1,
    endedAt: state === "done" || state === "aborted" ? 2 : null,
    outcome: (state === "done" ? "success" : state === "aborted" ? "aborted" : null) as Outcome | null,
    pendingPermissions: [],
    usage: emptyUsage(),
    subtreeUsage: emptyUsage(),
    ...extra,
  }) as AgentView;

// root ─┬─ planner ─┬─ coder-1 (running, 2 tool errors)
//       │           └─ coder-2 (done)
//       └─ tester (paused, waiting for an approval)
const view = snapshotView(
  {
    runId: "r_1",
    rootAgentId: "a_0",
    asOf: 10,
    usage: emptyUsage(),
    agents: [
      agent("a_0", null, "root", "running"),
      agent("a_1", "a_0", "planner", "running"),
      agent("a_2", "a_1", "coder-1", "running", { toolErrors: 2 }),
      agent("a_3", "a_1", "coder-2", "done"),
      agent("a_4", "a_0", "tester", "paused", { pendingPermissions: ["p_1"], queuePosition: 3 }),
    ],
  },
  [],
);
const ids = (rows: ReturnType<typeof treeRows>) => rows.map((row) => row.record.agentId);

describe("the console's tree rows", () => {
  it("are every agent in tree order, less what collapsed rows hide", () => {
    assert.deepEqual(ids(treeRows(view, new Set(), NO_FILTER)), ["a_0", "a_1", "a_2", "a_3", "a_4"]);
    assert.deepEqual(
      treeRows(view, new Set(), NO_FILTER).map((row) => [row.depth, row.hasChildren]),
      [
        [0, true],
        [1, true],
        [2, false],
        [2, false],
        [1, false],
      ],
    );
    const folded = treeRows(view, new Set(["a_1"]), NO_FILTER);
    assert.deepEqual(ids(folded), ["a_0", "a_1", "a_4"]);
    assert.equal(folded[1]?.collapsed, true);
    assert.deepEqual(ids(treeRows(view, new Set(parents(view)), NO_FILTER)), ["a_0"]);
    const hidden = subtreeStates(view, "a_1");
    assert.equal(hidden.below, 2);
    assert.deepEqual(
      [...hidden.states],
      [
        ["done", 1],
        ["running", 1],
      ],
    );
    assert.equal(view.agents.get("a_4")?.queuePosition, undefined, "a start-line place is not kept: it goes stale");
  });

  it("filtered, are the matches with their ancestors as context, whatever is collapsed", () => {
    const filtered = (filter: Partial<typeof NO_FILTER>) =>
      treeRows(view, new Set(["a_0"]), { ...NO_FILTER, ...filter }).map((row) =>
        row.context ? `(${row.record.agentId})` : row.record.agentId,
      );
    assert.deepEqual(filtered({ text: "CODER" }), ["(a_0)", "(a_1)", "a_2", "a_3"]);
    assert.deepEqual(filtered({ text: "a_4" }), ["(a_0)", "a_4"], "by id too");
    assert.deepEqual(filtered({ state: "done" }), ["(a_0)", "(a_1)", "a_3"]);
    assert.deepEqual(filtered({ state: "live" }), ["a_0", "a_1", "a_2", "a_4"]);
    assert.deepEqual(filtered({ state: "approval" }), ["(a_0)", "a_4"]);
    assert.deepEqual(filtered({ state: "errors" }), ["(a_0)", "(a_1)", "a_2"]);
    assert.deepEqual(filtered({ outcome: "success" }), ["(a_0)", "(a_1)", "a_3"]);
    assert.deepEqual(filtered({ text: "coder", outcome: "aborted" }), []);
  });

  it("read toolErrors when the daemon sends it, 0 when it does not", () => {
    assert.equal(toolErrors(view.agents.get("a_2")!), 2);
    assert.equal(toolErrors(view.agents.get("a_3")!), 0);
  });
});
