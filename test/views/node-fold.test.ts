/**
 * The run view's fold of where an agent runs: `node` from `agent_provisioned` (absent before it,
 * and for a ledger written before events carried it), and `unreachable: true` only while the last
 * of `agent_unreachable` / `agent_reachable` is the former and the agent has not ended.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { agentView, createRunView, foldEvent, type RunView, type StoredEvent } from "../../src/views/run-view.ts";

const AGENT = "a_1";

function fold(events: Array<Omit<StoredEvent, "seq" | "at">>): RunView {
  const view = createRunView("r_1");
  for (const [i, event] of events.entries()) foldEvent(view, { ...event, seq: i + 1, at: 1_000 + i });
  return view;
}

const spawned = {
  type: "agent_spawned",
  agentId: AGENT,
  data: {
    parentAgentId: null,
    runId: "r_1",
    specName: "x",
    depth: 0,
    spawnIndex: 0,
    sandboxId: null,
    waitFor: [],
    prompt: "go",
  },
};
const provisioned = (node?: string) => ({
  type: "agent_provisioned",
  agentId: AGENT,
  data: { sandboxId: "0b7e2a4c-0000-4000-8000-000000000001", ...(node === undefined ? {} : { node }) },
});
const unreachable = { type: "agent_unreachable", agentId: AGENT, data: { node: "n1" } };
const reachable = { type: "agent_reachable", agentId: AGENT, data: { node: "n1" } };
const ended = { type: "agent_ended", agentId: AGENT, data: { outcome: "lost", endedAt: 2_000, error: "gone" } };

/** The agent's view as GET /runs/:runId shows it: only the two fields under test. */
function where(view: RunView): { node?: unknown; unreachable?: unknown } {
  const record = view.agents.get(AGENT);
  assert.ok(record, "the agent is in the view");
  const shown = agentView(record);
  return {
    ...("node" in shown ? { node: shown.node } : {}),
    ...("unreachable" in shown ? { unreachable: shown.unreachable } : {}),
  };
}

describe("the agent view's node and unreachable", () => {
  it("has no node before its sandbox is provisioned, and the provisioned node after", () => {
    assert.deepEqual(where(fold([spawned])), {});
    assert.deepEqual(where(fold([spawned, provisioned("n1")])), { node: "n1" });
  });

  it("shows no node for a provision recorded without one (a ledger older than the field)", () => {
    assert.deepEqual(where(fold([spawned, provisioned()])), {});
    assert.equal(fold([spawned, provisioned()]).agents.get(AGENT)?.sandboxId, provisioned().data.sandboxId);
    assert.deepEqual(where(fold([spawned, provisioned("n1"), provisioned()])), {}, "a new provision without a node");
  });

  it("is unreachable only while the last reachability event says so", () => {
    assert.deepEqual(where(fold([spawned, provisioned("n1"), unreachable])), { node: "n1", unreachable: true });
    assert.deepEqual(where(fold([spawned, provisioned("n1"), unreachable, reachable])), { node: "n1" });
    assert.deepEqual(where(fold([spawned, provisioned("n1"), unreachable, reachable, unreachable])), {
      node: "n1",
      unreachable: true,
    });
    assert.deepEqual(where(fold([spawned, provisioned("n1"), reachable])), { node: "n1" });
  });

  it("is no longer unreachable once the agent ended, nor made so after", () => {
    assert.deepEqual(where(fold([spawned, provisioned("n1"), unreachable, ended])), { node: "n1" });
    assert.deepEqual(where(fold([spawned, provisioned("n1"), ended, unreachable])), { node: "n1" });
  });

  it("skips reachability events of a shape it does not know, and of agents it does not know", () => {
    const malformed = { type: "agent_unreachable", agentId: AGENT, data: {} };
    const stranger = { ...unreachable, agentId: "a_2" };
    const view = fold([spawned, provisioned("n1"), malformed, stranger]);
    assert.deepEqual(where(view), { node: "n1" });
    assert.equal(view.asOf, 4);
    assert.equal(view.agents.size, 1);
  });
});
