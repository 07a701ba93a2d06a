import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { machineLines } from "../../src/cli/machine-render.ts";
import { runTable, stateCounts } from "../../src/cli/run-table.ts";
import {
  type AgentState,
  MACHINE_TRANSITIONS_KEPT,
  type MachineView,
  type RunSummary,
  type Usage,
} from "../../src/swarm-api.ts";
import { type Daemon, type Json, startDaemon, waitForState } from "../support/daemon.ts";
import { freePort } from "../support/daemon-process.ts";
import { SPENT, swarm, swarmInProcess } from "./helpers.ts";

// `swarm runs` and `swarm machine`; the routes behind them are in test/e2e/run-list.test.ts.

const zero = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
  calls: 0,
});
const counts = (some: Partial<Record<AgentState, number>>): Record<AgentState, number> => ({
  spawning: 0,
  provisioning: 0,
  running: 0,
  paused: 0,
  done: 0,
  aborted: 0,
  ...some,
});

describe("swarm runs table and swarm machine lines", () => {
  const summary = (
    runId: string,
    specName: string,
    createdAt: number,
    states: Record<AgentState, number>,
    usage = zero(),
  ): RunSummary => {
    const agents = Object.values(states).reduce((a, b) => a + b, 0);
    const live = states.spawning + states.provisioning + states.running + states.paused;
    return { runId, rootAgentId: `a_${runId}`, specName, createdAt, states, agents, live, usage };
  };

  it("one line per run in the order given: id, root spec, age, live/all agents, the states some agent is in, spend", () => {
    const spent = { ...zero(), inputTokens: 12_000, outputTokens: 300, costUsd: 0.0135, calls: 2 };
    const runs = [
      summary("r_22", "lead", 100_000, counts({ running: 2, paused: 1, done: 3 })),
      summary("r_1", "echo", 40_000, counts({ done: 1 }), spent),
      summary("r_333", "", 0, counts({})),
    ];
    assert.deepEqual(runTable(runs, 130_000), [
      "RUN    SPEC  AGE  LIVE/ALL  STATES                       SPEND",
      "r_22   lead  30s  3/6       2 running, 1 paused, 3 done  -",
      "r_1    echo  1m   0/1       1 done                       12.3k tok $0.0135",
      "r_333  -     2m   0/0       -                            -",
    ]);
    assert.equal(
      stateCounts(counts({ aborted: 1, spawning: 2, provisioning: 1 })),
      "2 spawning, 1 provisioning, 1 aborted",
      "in life order, whatever the order given",
    );
  });

  it("the machine: state value as compact JSON, tags, then one line per transition (UTC time, event, state); notes what it cannot show", () => {
    const view: MachineView = {
      agentId: "a_1",
      running: true,
      value: { live: { running: { idle: "awake" } } },
      tags: ["live", "running"],
      transitions: [
        { at: Date.UTC(2025, 0, 2, 3, 4, 5, 6), event: "xstate.init", value: { unforked: "provisioning" } },
        {
          at: Date.UTC(2025, 0, 2, 3, 4, 5, 120),
          event: "provisioned",
          value: { live: { running: { idle: "awake" } } },
        },
      ],
    };
    assert.deepEqual(machineLines(view), [
      "machine of a_1",
      'state  {"live":{"running":{"idle":"awake"}}}',
      "tags   live, running",
      "TIME                      EVENT        STATE",
      '2025-01-02T03:04:05.006Z  xstate.init  {"unforked":"provisioning"}',
      '2025-01-02T03:04:05.120Z  provisioned  {"live":{"running":{"idle":"awake"}}}',
    ]);
    assert.deepEqual(machineLines({ agentId: "a_2", running: false, value: null, tags: [], transitions: [] }), [
      "machine of a_2 (not running: the agent ended before the daemon started)",
      "state  null",
      "tags   -",
      "no transitions since the daemon started",
    ]);
    const many = Array.from({ length: MACHINE_TRANSITIONS_KEPT }, (_, i) => ({
      at: i,
      event: "tick\nspoofed",
      value: "aborted",
    }));
    const lines = machineLines({ agentId: "a_3", running: true, value: "aborted", tags: [], transitions: many });
    assert.deepEqual(lines.slice(1, 5), [
      'state  "aborted"',
      "tags   -",
      `(the latest ${MACHINE_TRANSITIONS_KEPT} transitions; older ones are not kept)`,
      "TIME                      EVENT         STATE",
    ]);
    assert.equal(lines.at(-1), '1970-01-01T00:00:00.049Z  tick spoofed  "aborted"', "an event name stays on its line");
    assert.equal(lines.length, 5 + MACHINE_TRANSITIONS_KEPT);
  });
});

describe("swarm runs and machine: command-line errors", () => {
  it("exits 2 with the command's usage before calling the service; a valid line gets as far as the service", async () => {
    const env = { SWARM_URL: `http://127.0.0.1:${await freePort()}` };
    for (const [args, problem] of [
      [
        ["runs", "--limit", "0"],
        /^swarm: --limit must be an integer 1\.\.1000, not "0"\nusage: swarm runs \[--limit N\] \[--json\]\n$/,
      ],
      [["runs", "--limit", "1001"], /--limit must be an integer 1\.\.1000, not "1001"/],
      [["runs", "--limit", "ten"], /--limit must be an integer 1\.\.1000, not "ten"/],
      [["runs", "--limit"], /--limit/],
      [["runs", "r_1"], /^swarm: unexpected argument "r_1"\nusage: swarm runs/],
      [["runs", "--state", "running"], /--state/],
      [["machine"], /^swarm: missing <agentId>\nusage: swarm machine <agentId> \[--json\]\n$/],
      [["machine", "a_1", "a_2"], /unexpected argument "a_2"/],
      [["machine", "a_1", "--follow"], /--follow/],
    ] as const) {
      const bad = await swarmInProcess([...args], env);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
      assert.match(bad.stderr, problem, args.join(" "));
      assert.equal(bad.stdout, "");
    }
    for (const args of [["runs"], ["runs", "--limit", "1000", "--json"], ["machine", "a_1"]]) {
      assert.equal((await swarmInProcess(args, env)).code, 3, `${args.join(" ")} is a valid command line`);
    }
    const help = await swarmInProcess(["--help"], env);
    assert.match(
      help.stdout,
      /\n {2}swarm runs \[--limit N\] +every run, newest first[\s\S]*\n {2}swarm machine <agentId> +the agent's state machine/,
    );
    assert.equal(
      (await swarmInProcess(["machine", "--help"], env)).stdout,
      "usage: swarm machine <agentId> [--json]\n",
    );
  });
});

describe("swarm runs and machine against a live daemon", () => {
  let d: Daemon;
  let env: Record<string, string>;
  const json = (text: string): Json => JSON.parse(text);

  before(async () => {
    d = await startDaemon();
    env = { SWARM_URL: d.url };
  });
  after(() => d.stop());

  it("runs: none yet is a note and exit 0; then two runs newest first, in a table and --json; --limit keeps the newest", async () => {
    const empty = await swarmInProcess(["runs"], env);
    assert.deepEqual([empty.code, empty.stdout, empty.stderr], [0, "", "no runs\n"]);
    assert.equal((await swarmInProcess(["runs", "--json"], env)).stdout, '{"runs":[]}\n');

    const older = (await d.call("POST", "/runs", { spec: { name: "older", script: [] }, prompt: "one" })).body;
    assert.equal((await d.call("GET", `/agents/${older.rootAgentId}/result?wait=60`)).body.result, "one");
    await waitForState(d, older.rootAgentId, "done");
    const newer = (await d.call("POST", "/runs", { spec: { name: "newer", script: [] }, keepAlive: true })).body;
    await waitForState(d, newer.rootAgentId, "running");
    const kid = (
      await d.call("POST", `/runs/${newer.runId}/agents`, {
        parentAgentId: newer.rootAgentId,
        spec: { name: "kid", script: [] },
        keepAlive: true,
      })
    ).body;
    await waitForState(d, kid.agentId, "running");

    const table = await swarm(["runs"], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(
      table.stdout,
      new RegExp(
        `^RUN +SPEC +AGE +LIVE/ALL +STATES +SPEND\n${newer.runId} +newer +\\d+s +2/2 +2 running +-\n${older.runId} +older +\\d+s +0/1 +1 done +${SPENT}\n$`,
      ),
    );
    const listed = await swarmInProcess(["runs", "--json"], env);
    const { runs } = json(listed.stdout);
    assert.deepEqual(
      runs.map((r: Json) => [r.runId, r.rootAgentId, r.specName, r.agents, r.live, r.states]),
      [
        [newer.runId, newer.rootAgentId, "newer", 2, 2, counts({ running: 2 })],
        [older.runId, older.rootAgentId, "older", 1, 0, counts({ done: 1 })],
      ],
    );
    assert.equal(runs[1].usage.calls, 1, "the older run's one scripted answer was metered");
    assert.ok(runs[0].createdAt > runs[1].createdAt);
    const newest = await swarmInProcess(["runs", "--limit", "1", "--json"], env);
    assert.deepEqual(
      json(newest.stdout).runs.map((r: Json) => r.runId),
      [newer.runId],
    );
    const bad = await swarmInProcess(["runs", "--limit", "0"], env);
    assert.deepEqual([bad.code, bad.stdout], [2, ""]);
    assert.match(bad.stderr, /--limit must be an integer 1\.\.1000/);
    await d.call("DELETE", `/runs/${newer.runId}`);
  });

  it("machine: the state value, tags and transitions that led there, in text and --json; paused and aborted show; an unknown agent is a 404, exit 1", async () => {
    const created = (
      await d.call("POST", "/runs", { spec: { name: "watched", script: [] }, keepAlive: true, prompt: "hi" })
    ).body;
    const agentId = created.rootAgentId as string;
    assert.equal((await d.call("GET", `/agents/${agentId}/result?wait=60`)).body.result, "hi");

    const viewed = await swarmInProcess(["machine", agentId, "--json"], env);
    assert.equal(viewed.code, 0, viewed.stderr);
    const machine = json(viewed.stdout);
    assert.deepEqual(
      [machine.agentId, machine.running, machine.value, machine.tags],
      [agentId, true, { live: { running: { idle: "awake" } } }, ["live", "running"]],
    );
    assert.ok(machine.transitions.length >= 2, viewed.stdout);

    const text = await swarm(["machine", agentId], env);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split("\n");
    assert.deepEqual(
      lines.slice(0, 4).map((l) => l.replace(/ +/g, " ")),
      [
        `machine of ${agentId}`,
        'state {"live":{"running":{"idle":"awake"}}}',
        "tags live, running",
        "TIME EVENT STATE",
      ],
    );
    const rows = lines.slice(4).map((line) => /^(\S+) +(\S+) +(\S+)$/.exec(line)?.slice(1));
    assert.deepEqual(
      rows,
      machine.transitions.map((t: Json) => [new Date(t.at).toISOString(), t.event, JSON.stringify(t.value)]),
      "one line per transition, oldest first, as --json has them",
    );
    assert.ok(
      rows.some((r) => r?.[2] === '{"unforked":"provisioning"}'),
      text.stdout,
    );
    assert.equal(rows.at(-1)?.[2], '{"live":{"running":{"idle":"awake"}}}');

    assert.equal((await swarmInProcess(["pause", agentId], env)).code, 0);
    const paused = (await swarmInProcess(["machine", agentId], env)).stdout.split("\n");
    assert.deepEqual(paused.slice(1, 3), ['state  {"live":"paused"}', "tags   live, paused"]);
    assert.match(paused.at(-2) ?? "", /^\S+Z +\S+ +\{"live":"paused"\}$/, "the pause is the latest transition");
    assert.equal((await swarmInProcess(["stop", agentId], env)).code, 0);
    const ended = await swarmInProcess(["machine", agentId], env);
    assert.deepEqual(ended.stdout.split("\n").slice(1, 3), ['state  "aborted"', "tags   aborted"]);

    const unknown = await swarm(["machine", "a_00ff"], env);
    assert.deepEqual([unknown.code, unknown.stdout], [1, ""]);
    assert.match(unknown.stderr, /^swarm: service error 404: .*a_00ff/);
  });
});
