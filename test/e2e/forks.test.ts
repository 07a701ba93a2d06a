import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Daemon, e2eRuntime, startDaemon, waitForState } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";
import { openEvents } from "../support/sse-client.ts";

/**
 * Forks over HTTP and from inside a turn (spec §4.23 to §4.26), end to end: children carry their
 * parent's conversation (`{{userMessages}}` shows what each model call was given) and its /work at
 * the fork, each takes its own prompt, none sees a later write of its parent or of a sibling; the
 * first to succeed wins a wait; a child's changes are compared and adopted; bad requests make nothing.
 */
describe(`forks (${e2eRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon();
  });
  after(() => d.stop());

  const bash = (command: string) => ({ tool: "bash", args: { command } });
  const result = async (agentId: string) => (await d.call("GET", `/agents/${agentId}/result?wait=60`)).body;
  const agent = async (agentId: string) => (await d.call("GET", `/agents/${agentId}`)).body;
  const agentCount = async (runId: string) => (await d.call("GET", `/runs/${runId}`)).body.agents.length as number;

  /** A root kept alive, prompted once with `first` and idle after that turn: what children are forked from. */
  async function idleRoot(script: unknown[], first = "the password is tangerine", extra: Record<string, unknown> = {}) {
    const created = await d.call("POST", "/runs", {
      spec: { name: "root", script },
      keepAlive: true,
      prompt: first,
      ...extra,
    });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const { runId, rootAgentId } = created.body;
    assert.equal((await result(rootAgentId)).state, "settled");
    return { runId: runId as string, root: rootAgentId as string };
  }

  async function fork(agentId: string, body: Record<string, unknown>): Promise<string[]> {
    const forked = await d.call("POST", `/agents/${agentId}/fork`, body);
    assert.equal(forked.status, 202, JSON.stringify(forked.body));
    return forked.body.agentIds;
  }

  it("children start from the parent's conversation and files, each with its own prompt", async () => {
    const { runId, root } = await idleRoot([bash("echo base > /work/shared.txt"), { text: "noted" }]);
    const [a, b] = await fork(root, {
      prompts: ["try A", "try B"],
      spec: { name: "copy", script: [bash("cat /work/shared.txt"), { text: "{{userMessages}} | {{lastToolResult}}" }] },
    });
    assert.equal((await result(a!)).result, "the password is tangerine\ntry A | base\n");
    assert.equal((await result(b!)).result, "the password is tangerine\ntry B | base\n");

    const view = await agent(a!);
    assert.deepEqual(view.forkedFrom, { agentId: root, forkPoint: { turn: 1 } });
    assert.equal(view.parentAgentId, root);
    assert.equal(view.depth, 1);
    assert.deepEqual([view.spawnIndex, (await agent(b!)).spawnIndex], [0, 1]);
    assert.equal(view.specName, "copy");
    assert.equal((await agent(root)).forkedFrom, undefined, "only fork children carry forkedFrom");
    // keepAlive by default: both stay, live, to be compared.
    assert.equal(view.state, "running");
    const snapshot = (await d.call("GET", `/runs/${runId}`)).body;
    assert.deepEqual(
      snapshot.agents.find((x: { agentId: string }) => x.agentId === b).forkedFrom,
      { agentId: root, forkPoint: { turn: 1 } },
      "the snapshot carries it too",
    );

    const events = await openEvents(d.url, runId);
    const forked = await events.waitFor((m) => m.event === "agent_forked");
    const spawned = await events.waitFor((m) => m.event === "agent_spawned" && m.data.agentId === a);
    events.close();
    assert.equal(forked.data.agentId, root);
    assert.deepEqual(forked.data.children, [a, b]);
    assert.deepEqual(forked.data.forkPoint, { turn: 1 });
    assert.deepEqual(spawned.data.forkedFrom, { agentId: root, forkPoint: { turn: 1 } });
  });

  it("count and prompt make that many children with the same prompt; the forked spec is the parent's", async () => {
    const { root } = await idleRoot([{ text: "first: {{lastUserMessage}}" }]);
    const ids = await fork(root, { count: 3, prompt: "again" });
    assert.equal(ids.length, 3);
    for (const id of ids) {
      // The parent's script from its first step: a child's script starts at its own beginning.
      assert.equal((await result(id)).result, "first: again");
      assert.equal((await agent(id)).specName, "root");
    }
  });

  it("no child sees a later write of its parent or of a sibling", async () => {
    const { root } = await idleRoot([
      bash("echo base > /work/base.txt"),
      { text: "ready" },
      bash("echo late > /work/late.txt"),
      { text: "wrote late" },
    ]);
    const spec = {
      script: [
        bash("n=c$RANDOM$RANDOM; echo $n > /work/$n.txt; sleep 0.3; ls -A /work | tr '\\n' ' '"),
        { text: "{{lastToolResult}}" },
      ],
    };
    const children = await fork(root, { count: 3, prompt: "write and look", spec });
    // The parent writes after the fork, while its children run.
    await d.call("POST", `/agents/${root}/prompt`, { text: "write late" });
    const listings = await Promise.all(children.map(async (id) => (await result(id)).result as string));
    for (const listing of listings) {
      const names = listing.trim().split(" ");
      assert.equal(names.length, 2, `one base file and its own: ${listing}`);
      assert.equal(names[0], "base.txt");
      assert.match(names[1]!, /^c\d+\.txt$/);
    }
    assert.equal(new Set(listings).size, 3, "each saw its own file, none a sibling's");
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
    const copy = await agent(agentIds[0]);
    assert.equal(copy.forkedFrom.agentId, rootAgentId);
    assert.equal(copy.forkedFrom.forkPoint.turn, 1);
    assert.match(copy.forkedFrom.forkPoint.toolCallId, /^toolu_/);
    assert.equal(await agentCount(runId), 3);
    // Copies made from inside end after their turn like any spawned child, and so does the planner.
    await waitForState(d, agentIds[0], "done");
    await waitForState(d, rootAgentId, "done");
  });

  it("waits for the first success and stops the others; all waits for every one", async () => {
    const { runId, root } = await idleRoot([{ text: "ok" }]);
    const [fast] = await fork(root, { prompts: ["fast"], spec: { script: [{ text: "fast wins", delayMs: 100 }] } });
    const slow = await fork(root, {
      prompts: ["slow", "slower"],
      spec: { script: [{ text: "too late", delayMs: 20_000 }] },
    });
    const wait = await d.call("POST", `/runs/${runId}/wait`, {
      agentIds: [...slow, fast],
      mode: "first",
      stopOthers: true,
      timeoutMs: 30_000,
    });
    assert.equal(wait.status, 200, JSON.stringify(wait.body));
    assert.equal(wait.body.winner, fast);
    assert.deepEqual(wait.body.results, [{ agentId: fast, state: "settled", outcome: "success", result: "fast wins" }]);
    for (const id of slow) assert.equal((await agent(id)).state, "aborted", "the others were stopped");
    assert.equal((await agent(fast!)).state, "running", "the winner is left as it was");

    const all = await d.call("POST", `/runs/${runId}/wait`, { agentIds: [fast, ...slow], timeoutMs: 5_000 });
    assert.equal(all.status, 200);
    assert.equal(all.body.winner, null);
    assert.deepEqual(
      all.body.results.map((r: { agentId: string; outcome: string }) => [r.agentId, r.outcome]),
      [
        [fast, "success"],
        [slow[0], "aborted"],
        [slow[1], "aborted"],
      ],
    );

    const [pending] = await fork(root, {
      prompts: ["pending"],
      spec: { script: [{ text: "later", delayMs: 20_000 }] },
    });
    const timedOut = await d.call("POST", `/runs/${runId}/wait`, {
      agentIds: [pending],
      mode: "first",
      timeoutMs: 300,
    });
    assert.deepEqual(timedOut.body, {
      results: [{ agentId: pending, state: "pending", outcome: null, result: null }],
      winner: null,
    });
    await d.call("POST", `/agents/${pending}/stop`);
  });

  it("lists a child's changes with diffs, and adopts them into its parent, also after the child ended", async () => {
    const { runId, root } = await idleRoot([
      bash("printf 'one\\ntwo\\nthree\\n' > /work/a.txt; echo keep > /work/b.txt; echo bye > /work/gone.txt"),
      { text: "ready" },
      bash("cat /work/a.txt /work/new.txt /work/sub/x.txt; ls -A /work | tr '\\n' ' '"),
      { text: "{{lastToolResult}}" },
    ]);
    const [child] = await fork(root, {
      prompts: ["change things"],
      spec: {
        script: [
          bash(
            "printf 'one\\n2\\nthree\\n' > /work/a.txt; echo fresh > /work/new.txt; rm /work/gone.txt; mkdir /work/sub; echo x > /work/sub/x.txt",
          ),
          { text: "changed" },
        ],
      },
    });
    assert.equal((await result(child!)).result, "changed");

    const changes = await d.call("GET", `/agents/${child}/changes`);
    assert.equal(changes.status, 200, JSON.stringify(changes.body));
    assert.deepEqual(changes.body.forkedFrom, { agentId: root, forkPoint: { turn: 1 } });
    const byPath = Object.fromEntries(changes.body.files.map((f: { path: string }) => [f.path, f]));
    assert.deepEqual(Object.keys(byPath), ["a.txt", "gone.txt", "new.txt", "sub", "sub/x.txt"]);
    assert.deepEqual(
      [byPath["a.txt"].change, byPath["a.txt"].kind, byPath["a.txt"].size, byPath["a.txt"].baseSize],
      ["modified", "file", 12, 14],
    );
    assert.match(
      byPath["a.txt"].diff,
      /^--- a\/a\.txt\n\+\+\+ b\/a\.txt\n@@ -1,3 \+1,3 @@\n one\n-two\n\+2\n three\n$/,
    );
    assert.equal(byPath["gone.txt"].change, "deleted");
    assert.equal(byPath["gone.txt"].size, null);
    assert.equal(byPath["new.txt"].change, "added");
    assert.match(byPath["new.txt"].diff, /^--- \/dev\/null\n\+\+\+ b\/new\.txt\n/);
    assert.deepEqual([byPath.sub.change, byPath.sub.kind], ["added", "dir"]);
    assert.equal(changes.body.diffBytes > 0, true);

    // The child ends; its changes stay with the run.
    await d.call("POST", `/agents/${child}/stop`);
    await waitForState(d, child!, "aborted");
    const adopted = await d.call("POST", `/agents/${root}/adopt`, { from: child });
    assert.equal(adopted.status, 200, JSON.stringify(adopted.body));
    assert.deepEqual(adopted.body, {
      agentId: root,
      from: child,
      files: [
        { path: "a.txt", change: "modified" },
        { path: "gone.txt", change: "deleted" },
        { path: "new.txt", change: "added" },
        { path: "sub", change: "added" },
        { path: "sub/x.txt", change: "added" },
      ],
      skipped: [],
    });
    await d.call("POST", `/agents/${root}/prompt`, { text: "look" });
    await pollUntil(
      async () => (await result(root)).result,
      (text) => text !== "ready",
      "the root's second turn",
    );
    assert.equal((await result(root)).result, "one\n2\nthree\nfresh\nx\na.txt b.txt new.txt sub ");

    const events = await openEvents(d.url, runId);
    const event = await events.waitFor((m) => m.event === "changes_adopted");
    events.close();
    assert.equal(event.data.agentId, root);
    assert.equal(event.data.from, child);
    assert.equal((event.data.files as unknown[]).length, 5);
  });

  it("refuses an adopt both sides changed (409, listing them) unless the child's version wins", async () => {
    const { root } = await idleRoot([
      bash("echo base > /work/both.txt; echo base > /work/mine.txt"),
      { text: "ready" },
      bash("echo parent > /work/both.txt"),
      { text: "changed too" },
      bash("cat /work/both.txt /work/mine.txt"),
      { text: "{{lastToolResult}}" },
    ]);
    const [child] = await fork(root, {
      prompts: ["change both.txt"],
      spec: { script: [bash("echo child > /work/both.txt; echo child > /work/theirs.txt"), { text: "done" }] },
    });
    await result(child!);
    await d.call("POST", `/agents/${root}/prompt`, { text: "change it too" });
    await pollUntil(
      async () => (await result(root)).result,
      (t) => t === "changed too",
      "the parent's change",
    );

    const refused = await d.call("POST", `/agents/${root}/adopt`, { from: child });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error, /1 path was changed both by .* and by its child .* since the fork: both\.txt;/);
    const theirs = await d.call("POST", `/agents/${root}/adopt`, { from: child, onConflict: "theirs" });
    assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
    assert.deepEqual(
      theirs.body.files.map((f: { path: string }) => f.path),
      ["both.txt", "theirs.txt"],
    );
    await d.call("POST", `/agents/${root}/prompt`, { text: "look" });
    await pollUntil(
      async () => (await result(root)).result,
      (t) => t !== "changed too",
      "the parent's look",
    );
    assert.equal((await result(root)).result, "child\nbase\n");
  });

  it("forks a hibernated agent without waking it", async () => {
    const sleepy = await startDaemon({ hibernateAfterMs: 200 });
    try {
      const created = await sleepy.call("POST", "/runs", {
        spec: { name: "sleepy", script: [bash("echo dreamt > /work/dream.txt"), { text: "slept" }] },
        keepAlive: true,
        prompt: "dream",
      });
      const root = created.body.rootAgentId;
      await pollUntil(
        async () => (await sleepy.call("GET", `/agents/${root}`)).body.hibernated,
        (h) => h === true,
        "the root to hibernate",
      );
      const forked = await sleepy.call("POST", `/agents/${root}/fork`, {
        prompts: ["wake me not"],
        spec: { script: [bash("cat /work/dream.txt"), { text: "{{userMessages}}: {{lastToolResult}}" }] },
      });
      assert.equal(forked.status, 202, JSON.stringify(forked.body));
      const child = forked.body.agentIds[0];
      assert.equal(
        (await sleepy.call("GET", `/agents/${child}/result?wait=60`)).body.result,
        "dream\nwake me not: dreamt\n",
      );
      const view = (await sleepy.call("GET", `/agents/${root}`)).body;
      assert.equal(view.hibernated, true, "the forked agent still hibernates");
      assert.equal(view.state, "running");
    } finally {
      await sleepy.stop();
    }
  });

  it("counts children's spend toward their parent: a spend cap pauses the fork tree", async () => {
    const { root } = await idleRoot([{ text: "ok" }], "x".repeat(4_000), { budget: { maxTokens: 9_000 } });
    const children = await fork(root, {
      count: 3,
      prompt: "spend",
      spec: { script: Array.from({ length: 20 }, () => bash("true")) },
    });
    await pollUntil(
      async () => (await agent(root)).pausedBy,
      (by) => by === "budget",
      "the root paused by its budget",
    );
    // Each child is paused with its parent's subtree, or first by its own cap (what its parent had left
    // at the fork, when it alone spent that before its siblings and parent together spent the rest).
    for (const id of children) {
      await pollUntil(
        async () => (await agent(id)).pausedBy,
        (by) => by === "cascade" || by === "budget",
        `${id} paused with the fork tree`,
      );
    }
    const view = await agent(root);
    const spent =
      view.subtreeUsage.inputTokens +
      view.subtreeUsage.outputTokens +
      view.subtreeUsage.cacheReadTokens +
      view.subtreeUsage.cacheWriteTokens;
    const own = children.reduce(async (sum, id) => (await sum) + (await agent(id)).usage.calls, Promise.resolve(0));
    assert.ok((await own) > 0, "the children made model calls");
    assert.ok(spent >= 9_000, `the subtree spent its cap (${spent})`);
    await d.call("POST", `/agents/${root}/stop`, { scope: "subtree" });
  });

  it("refuses bad forks, adopts and waits with a clear 4xx and makes nothing", async () => {
    const { runId, root } = await idleRoot([{ text: "ok" }, { text: "busy", delayMs: 3_000 }]);
    const before = await agentCount(runId);
    const refuse = async (path: string, body: unknown, status: number, pattern: RegExp) => {
      const answer = await d.call("POST", path, body);
      assert.equal(answer.status, status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
      assert.match(answer.body.error, pattern);
    };
    await refuse(`/agents/${root}/fork`, { prompts: [] }, 400, /body\.prompts: must hold 1\.\.32 prompts/);
    await refuse(`/agents/${root}/fork`, { prompts: Array(33).fill("p") }, 400, /body\.prompts: must hold 1\.\.32/);
    await refuse(`/agents/${root}/fork`, { count: 2 }, 400, /count/);
    await refuse(
      `/agents/${root}/fork`,
      { prompts: ["a"], count: 1, prompt: "b" },
      400,
      /either prompts, or count and prompt/,
    );
    await refuse(`/agents/${root}/fork`, { count: 0, prompt: "p" }, 400, /body\.count: must be an integer 1\.\.32/);
    await refuse(
      `/agents/${root}/fork`,
      { prompts: ["a"], spec: { image: "x" } },
      400,
      /body\.spec\.image: unknown field/,
    );
    await refuse(`/agents/${root}/fork`, { prompts: ["a"], spec: { limits: { memoryMiB: 1e9 } } }, 400, /memoryMiB/);
    await refuse(
      `/agents/${root}/fork`,
      { prompts: ["a"], spec: { model: { provider: "nope", id: "x" } } },
      400,
      /model/,
    );
    await refuse(`/agents/a_0000000000000000/fork`, { prompts: ["a"] }, 404, /does not exist/);

    // In a turn: busy, with what to do instead.
    await d.call("POST", `/agents/${root}/prompt`, { text: "work slowly" });
    await pollUntil(
      async () => (await agent(root)).state,
      (s) => s === "running",
      "running",
    );
    await refuse(`/agents/${root}/fork`, { prompts: ["a"] }, 409, /in a turn.*fork itself from inside its turn/);
    await refuse(`/agents/${root}/adopt`, { from: root }, 400, /is not a fork child of/);
    await refuse(`/agents/${root}/adopt`, { from: "a_0123456789abcdef" }, 400, /is not an agent of this run/);
    await refuse(
      `/agents/${root}/adopt`,
      { from: root, onConflict: "mine" },
      400,
      /onConflict: must be "fail" or "theirs"/,
    );
    const notFork = await d.call("GET", `/agents/${root}/changes`);
    assert.equal(notFork.status, 409);
    assert.match(notFork.body.error, /was not made by a fork/);
    await refuse(`/runs/${runId}/wait`, { agentIds: [] }, 400, /body\.agentIds: must name 1\.\.256 agents/);
    await refuse(`/runs/${runId}/wait`, { agentIds: ["a_0123456789abcdef"] }, 400, /is not an agent of run/);
    await refuse(
      `/runs/${runId}/wait`,
      { agentIds: [root], timeoutMs: 0 },
      400,
      /timeoutMs: must be an integer 1\.\.600000/,
    );
    await refuse(`/runs/${runId}/wait`, { agentIds: [root], timeoutMs: 600_001 }, 400, /timeoutMs/);
    await refuse(`/runs/${runId}/wait`, { agentIds: [root], mode: "any" }, 400, /mode: must be "all" or "first"/);

    assert.equal(await agentCount(runId), before, "no refused request made an agent");
    await d.call("POST", `/agents/${root}/stop`);
  });
});
