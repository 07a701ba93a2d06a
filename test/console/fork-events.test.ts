/**
 * What the console makes of forks without a browser: whether an agent is between turns (what
 * enables Fork and Adopt) from its turn events, backfill included, and the event log's lines for
 * the fork events, in words, taken without a throw whatever their data holds.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { forkBlocked, forkPrompts } from "../../src/console/forks.ts";
import { RunState } from "../../src/console/run-state.ts";
import { recordOfView } from "../../src/views/run-view.ts";

const at = 1_700_000_000_000;
let seq = 0;
/** A persisted event as the stream hands it over. */
const persisted = (event: string, agentId: string | null, data: Record<string, unknown> = {}) => ({
  id: String(++seq),
  event,
  data: JSON.stringify({ ...data, agentId, seq, at }),
});

describe("the console's view of forks", () => {
  it("knows an agent is between turns from its turn events, and not before one came", () => {
    const state = new RunState("r_1");
    assert.equal(state.betweenTurns("a_1"), null, "nothing received: not known");
    state.apply(persisted("agent_start", "a_1"));
    assert.equal(state.betweenTurns("a_1"), false);
    state.apply(persisted("agent_end", "a_1"));
    assert.equal(state.betweenTurns("a_1"), true);
    state.apply(persisted("agent_start", "a_1"));
    state.apply(persisted("handle_settled", "a_1", { outcome: "success", resultRef: null }));
    assert.equal(state.betweenTurns("a_1"), true);
    // An ephemeral event of the same name is the harness's word only: it moves nothing.
    state.apply({ id: undefined, event: "agent_start", data: JSON.stringify({ agentId: "a_1" }) });
    assert.equal(state.betweenTurns("a_1"), true);
    state.apply(persisted("agent_ended", "a_1", { outcome: "success", endedAt: at }));
    assert.equal(state.betweenTurns("a_1"), null);
  });

  it("enables Fork between turns only, and takes one prompt per line", () => {
    const record = recordOfView({
      agentId: "a_1",
      runId: "r_1",
      parentAgentId: null,
      depth: 0,
      spawnIndex: 0,
      state: "running",
      specName: "root",
      sandboxId: "s",
      createdAt: at,
      endedAt: null,
      outcome: null,
      pendingPermissions: [],
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, calls: 0 },
      subtreeUsage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, calls: 0 },
      toolErrors: 0,
    });
    assert.equal(forkBlocked(record, true), null);
    assert.equal(forkBlocked(record, null), null, "not known: the daemon is asked, and says");
    assert.equal(forkBlocked(record, false), "in a turn: an agent is forked between turns");
    assert.equal(forkBlocked({ ...record, state: "paused" }, true), null, "paused while idle");
    assert.equal(forkBlocked({ ...record, draining: true }, true), "draining: it starts no new children");
    assert.equal(forkBlocked({ ...record, state: "provisioning" }, null), "provisioning: not started yet");
    assert.deepEqual(forkPrompts(" try A \n\n\ttry B\n"), ["try A", "try B"]);
  });

  it("logs the fork events in words, and hostile data as JSON without a throw", () => {
    const state = new RunState("r_1");
    state.apply(persisted("agent_forked", "a_1", { children: ["a_2", "a_3"], forkPoint: { turn: 2 } }));
    state.apply(persisted("agent_forked", "a_1", { children: ["a_4"], forkPoint: { turn: 3, toolCallId: "toolu_1" } }));
    state.apply(
      persisted("changes_adopted", "a_1", {
        from: "a_2",
        files: [
          { path: "x.txt", change: "added" },
          { path: "y.txt", change: "deleted" },
        ],
      }),
    );
    state.apply(persisted("changes_adopted", "a_1", { from: "a_3", files: [] }));
    state.apply(
      persisted("agent_spawned", "a_2", {
        parentAgentId: "a_1",
        specName: "copy",
        forkedFrom: { agentId: "a_1", forkPoint: { turn: 2 } },
      }),
    );
    assert.deepEqual(
      state.log.map((entry) => entry.summary),
      [
        "2 children after turn 2: a_2, a_3",
        "1 child at spawn_agent call toolu_1 in turn 3: a_4",
        "from a_2: added x.txt, deleted y.txt",
        "from a_3: nothing to apply",
        'fork of a_1 after turn 2 · {"parentAgentId":"a_1","specName":"copy"}',
      ],
    );
    const hostile = [
      persisted("agent_forked", "a_1", { children: "a_2", forkPoint: { turn: { toString: null } } }),
      persisted("agent_forked", "a_1", { children: [{ toString: null }, "a_5".repeat(200)], forkPoint: null }),
      persisted("changes_adopted", "a_1", { from: 7, files: [{ path: { x: 1 } }] }),
      persisted("changes_adopted", "a_1", { from: "a_2", files: [null, 3, { path: "ok", change: "added" }] }),
      persisted("agent_spawned", "a_6", { forkedFrom: { agentId: ["a_1"] } }),
    ];
    for (const message of hostile) assert.doesNotThrow(() => state.apply(message));
    const lines = state.log.slice(-hostile.length).map((entry) => entry.summary);
    assert.equal(lines[0], '{"children":"a_2","forkPoint":{"turn":{"toString":null}}}');
    assert.ok(lines[1]!.startsWith("1 child: a_5a_5") && lines[1]!.length <= 301, "cut to one line");
    assert.equal(lines[3], "from a_2: added ok");
  });
});
