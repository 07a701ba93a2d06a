import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { until } from "../support/poll.ts";
import { openEvents } from "../support/sse-client.ts";

/**
 * Forks over HTTP and from inside a turn (spec §4.23 to §4.26), end to end: children carry their
 * parent's conversation (`{{userMessages}}` shows what each model call was given) and its /work at
 * the fork, each takes its own prompt, none sees a later write of its parent or of a sibling; the
 * first to succeed wins a wait; a child's changes are compared and adopted.
 */
describe(`forks (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  /** A root kept alive, prompted once with `secret` and idle after it: what children are forked from. */
  async function idleRoot(script: unknown[], secret = "the password is tangerine") {
    const created = await d.call("POST", "/runs", { spec: { name: "root", script }, keepAlive: true, prompt: secret });
    assert.equal(created.status, 202);
    const { runId, rootAgentId } = created.body;
    const settled = await d.call("GET", `/agents/${rootAgentId}/result?wait=60`);
    assert.equal(settled.body.state, "settled");
    return { runId: runId as string, root: rootAgentId as string };
  }

  const result = async (agentId: string) => (await d.call("GET", `/agents/${agentId}/result?wait=60`)).body;

  it("children start from the parent's conversation and files, each with its own prompt", async () => {
    const { runId, root } = await idleRoot([
      { tool: "bash", args: { command: "echo base > /work/shared.txt" } },
      { text: "noted" },
    ]);
    const forked = await d.call("POST", `/agents/${root}/fork`, {
      prompts: ["try A", "try B"],
      spec: {
        name: "copy",
        script: [
          { tool: "bash", args: { command: "cat /work/shared.txt" } },
          { text: "{{userMessages}} | {{lastToolResult}}" },
        ],
      },
    });
    assert.equal(forked.status, 202, JSON.stringify(forked.body));
    assert.equal(forked.body.agentIds.length, 2);
    const [a, b] = forked.body.agentIds as string[];
    assert.equal((await result(a!)).result, "the password is tangerine\ntry A | base\n");
    assert.equal((await result(b!)).result, "the password is tangerine\ntry B | base\n");

    const view = (await d.call("GET", `/agents/${a}`)).body;
    assert.deepEqual(view.forkedFrom, { agentId: root, forkPoint: { turn: 1 } });
    assert.equal(view.parentAgentId, root);
    assert.equal(view.specName, "copy");
    assert.equal((await d.call("GET", `/agents/${root}`)).body.forkedFrom, undefined);
    // keepAlive by default: both wait, live, to be compared.
    assert.equal(view.state, "running");

    const events = await openEvents(d.url, runId);
    const forkedEvent = await events.waitFor((m) => m.event === "agent_forked");
    events.close();
    assert.equal(forkedEvent.data.agentId, root);
    assert.deepEqual(forkedEvent.data.children, [a, b]);
    assert.deepEqual(forkedEvent.data.forkPoint, { turn: 1 });
  });

  it("forks from inside a turn: each copy knows it is one and takes its own prompt", async () => {
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "planner",
        script: [
          {
            tool: "spawn_agent",
            args: {
              fork: true,
              prompts: ["left", "right"],
              spec: { script: [{ text: "{{lastToolResult}} / {{userMessages}}" }] },
            },
          },
          { text: "planned: {{lastToolResult}}" },
        ],
      },
      prompt: "plan the work",
    });
    const { runId, rootAgentId } = created.body;
    const planned = await result(rootAgentId);
    const { agentIds } = JSON.parse(planned.result.slice("planned: ".length));
    assert.equal(agentIds.length, 2);
    const texts = await Promise.all(agentIds.map(async (id: string) => (await result(id)).result));
    assert.deepEqual(texts, [
      "forked: you are copy 1 of 2 / plan the work\nleft",
      "forked: you are copy 2 of 2 / plan the work\nright",
    ]);
    const copy = (await d.call("GET", `/agents/${agentIds[0]}`)).body;
    assert.equal(copy.forkedFrom.agentId, rootAgentId);
    assert.equal(copy.forkedFrom.forkPoint.turn, 1);
    assert.match(copy.forkedFrom.forkPoint.toolCallId, /^toolu_/);
    const run = (await d.call("GET", `/runs/${runId}`)).body;
    assert.equal(run.agents.length, 3);
  });
});
