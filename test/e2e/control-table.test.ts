/**
 * docs/controls.md is true: each cell of its tables (agent controls × agent states, approvals ×
 * request states, run controls × run states) is tried on a new agent, request or run brought into
 * that row's state on a live daemon (HTTP on loopback, simulated runtime), and the answer must be
 * the cell's status and outcome, delivery, child state or error code. Then the same again with
 * `swarm` (in this process, over HTTP): what it prints and its exit code must be the row of "What
 * the CLI says" for that answer. Every row of that table must be met.
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { swarmInProcess, tempDir } from "../cli/helpers.ts";
import {
  AGENT_STATES,
  type Daemons,
  REQUEST_STATES,
  RUN_STATES,
  startDaemons,
  type Target,
} from "../support/control-states.ts";
import type { Json, Reply } from "../support/daemon.ts";
import { waitForState } from "../support/daemon.ts";

const DOC = readFileSync(join(SWARMD_ROOT, "docs/controls.md"), "utf8");

/** The rows of the first table under the heading `## title`, each cell trimmed. */
function table(title: string): string[][] {
  const section = DOC.split(/^## /m).find((part) => part.startsWith(`${title}\n`));
  assert.ok(section, `docs/controls.md has a section "${title}"`);
  const lines = section.split("\n");
  const first = lines.findIndex((line) => line.startsWith("|"));
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return [rows[0] ?? [], ...rows.slice(2)];
}

/**
 * What tells one refusal from another: the code's message (the body carries no code, spec §7).
 * A cell naming a code not listed here fails.
 */
const MESSAGES: Record<string, RegExp> = {
  AGENT_NOT_LIVE: /^agent a_\w+ is not live$/,
  AGENT_NOT_PAUSED: /^agent a_\w+ is not paused$/,
  AGENT_DRAINING: /^agent a_\w+ is draining: /,
  AGENT_NOT_FOUND: /^(agent a_\w+ does not exist|parentAgentId a_\w+ is not an agent of run r_\w+)$/,
  RUN_NOT_FOUND: /^run r_\w+ does not exist$/,
  PERMISSION_RESOLVED: /^approval request p_\w+ was already resolved /,
  PERMISSION_NOT_FOUND: /^agent a_\w+ has no approval request p_\w+$/,
};

/** The answer against a cell: `202 applied`, `409 AGENT_NOT_LIVE`, `200`. */
function checkCell(cell: string, reply: Reply<Json>, read: (body: Json) => string | undefined, where: string) {
  const [status, detail] = cell.split(" ");
  assert.equal(String(reply.status), status, `${where}: ${JSON.stringify(reply.body)}`);
  if (reply.status >= 400) {
    const pattern = MESSAGES[detail ?? ""];
    assert.ok(pattern, `${where}: ${cell} names a code this test knows`);
    assert.match(reply.body.error, pattern, `${where}: the message of ${detail}`);
  } else assert.equal(read(reply.body), detail, `${where}: ${JSON.stringify(reply.body)}`);
}

const outcomeOf = (body: Json) => (body.results as Json[]).map((r) => r.outcome).join(" ");

interface Column {
  send(t: Target): Promise<Reply<Json>>;
  /** What of a 2xx answer the cell names (nothing: undefined). */
  read: (body: Json) => string | undefined;
  /** The `swarm` command line for the same control. */
  cli(t: Target, spec: string): string[];
}

const spawnUnder = (t: Target) =>
  t.d.call("POST", `/runs/${t.runId}/agents`, {
    parentAgentId: t.agentId,
    spec: { name: "kid", script: [] },
    keepAlive: true,
  });
const none = () => undefined;

const AGENT_COLUMNS: Record<string, Column> = {
  pause: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/pause`),
    read: outcomeOf,
    cli: (t) => ["pause", t.agentId],
  },
  resume: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/resume`),
    read: outcomeOf,
    cli: (t) => ["resume", t.agentId],
  },
  stop: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/stop`),
    read: outcomeOf,
    cli: (t) => ["stop", t.agentId],
  },
  "stop, drain": {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/stop`, { mode: "drain" }),
    read: outcomeOf,
    cli: (t) => ["stop", t.agentId, "--mode", "drain"],
  },
  prompt: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/prompt`, { text: "more" }),
    read: none,
    cli: (t) => ["prompt", t.agentId, "more"],
  },
  steer: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/steer`, { message: "a hint" }),
    read: (body) => body.delivery,
    cli: (t) => ["steer", t.agentId, "a", "hint"],
  },
  budget: {
    send: (t) => t.d.call("POST", `/agents/${t.agentId}/budget`, { maxTokens: 1_000_000 }),
    read: none,
    cli: (t) => ["budget", t.agentId, "--max-tokens", "1000000"],
  },
  "spawn under it": {
    send: spawnUnder,
    read: (body) => body.state,
    cli: (t, spec) => ["spawn", t.agentId, spec, "--keep-alive"],
  },
};

const decide = (decision: "allow" | "deny"): Column => ({
  send: (t) => t.d.call("POST", `/agents/${t.agentId}/permissions/${t.requestId}`, { decision }),
  read: none,
  cli: (t) => [decision, t.agentId, t.requestId ?? ""],
});
const REQUEST_COLUMNS: Record<string, Column> = { allow: decide("allow"), deny: decide("deny") };

const RUN_COLUMNS: Record<string, Column> = {
  snapshot: { send: (t) => t.d.call("GET", `/runs/${t.runId}`), read: none, cli: (t) => ["tree", t.runId, "--once"] },
  delete: { send: (t) => t.d.call("DELETE", `/runs/${t.runId}`), read: none, cli: (t) => ["delete", t.runId] },
  purge: {
    send: (t) => t.d.call("DELETE", `/runs/${t.runId}?purge=true`),
    read: none,
    cli: (t) => ["delete", t.runId, "--purge"],
  },
  "spawn into it": AGENT_COLUMNS["spawn under it"] as Column,
};

/** The CLI table's name for a column where it differs. */
const CLI_CONTROL: Record<string, string> = { "spawn into it": "spawn under it" };

/** "What the CLI says": control, answer, what it prints (a template), exit code; and whether a run met it. */
const CLI_ROWS = table("What the CLI says")
  .slice(1)
  .map(([control = "", answer = "", prints = "", exit = ""]) => ({
    control,
    answer,
    prints: prints.replace(/^`|`$/g, ""),
    exit: Number(exit),
    met: false,
  }));

function cliRowsFor(control: string, answer: string) {
  const name = CLI_CONTROL[control] ?? control;
  return CLI_ROWS.filter(
    (row) =>
      row.answer === answer &&
      (row.control === name || row.control === "any of these" || row.control.split(" or ").includes(name)),
  );
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A template of the CLI table as a pattern: `<id>`, `<run>` and `<request>` exactly, any other `<…>` as some text. */
function templatePattern(template: string, t: Target): RegExp {
  const exact: Record<string, string> = { id: t.agentId, run: t.runId, request: t.requestId ?? "" };
  const source = literal(template).replace(/<([^>]+)>/g, (_, name: string) =>
    exact[name] === undefined ? ".+?" : literal(exact[name] ?? ""),
  );
  return new RegExp(`^${source}$`);
}

describe("docs/controls.md: every control in every state, over HTTP and with swarm (simulated runtime)", () => {
  let ds: Daemons;
  let dir: string;
  let spec: string;
  before(async () => {
    ds = await startDaemons();
    dir = tempDir("swarm-controls-");
    spec = join(dir, "kid.json");
    writeFileSync(spec, JSON.stringify({ name: "kid", script: [] }));
  });
  after(async () => {
    await ds?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `swarm` against the target's daemon: its first line and exit code must be a row of the CLI table for `cell`. */
  async function checkCli(control: string, cell: string, column: Column, t: Target, where: string) {
    const run = await swarmInProcess(column.cli(t, spec), { SWARM_URL: t.d.url, SWARM_SPECS_DIR: dir });
    const rows = cliRowsFor(control, cell);
    assert.ok(rows.length > 0, `${where}: the CLI table has a row for ${control} ${cell}`);
    const [line = ""] = (run.stdout || run.stderr).split("\n");
    const row = rows.find((r) => templatePattern(r.prints, t).test(line));
    assert.ok(
      row,
      `${where}: swarm printed ${JSON.stringify(line)} (exit ${run.code}), not one of ${rows.map((r) => r.prints).join(" | ")}`,
    );
    assert.equal(run.code, row.exit, `${where}: exit code of ${JSON.stringify(line)}`);
    assert.equal(run.stdout === "", line.startsWith("swarm:"), `${where}: a refusal on stderr, the rest on stdout`);
    row.met = true;
  }

  /**
   * Every cell of a table: a new target in the row's state per request, one over HTTP and one with
   * `swarm`. The cells of a row run at once, but for rows that hold every sandbox start.
   */
  async function checkTable(
    title: string,
    states: Record<string, (ds: Daemons) => Promise<Target>>,
    columns: Record<string, Column>,
  ) {
    const [header = [], ...rows] = table(title);
    assert.deepEqual(header.slice(1), Object.keys(columns), `${title}: the columns this test sends`);
    assert.deepEqual(
      rows.map(([label]) => label),
      Object.keys(states),
      `${title}: the rows this test makes`,
    );
    for (const [label = "", ...cells] of rows) {
      const make = states[label];
      assert.ok(make);
      const tryCell = async (name: string, i: number) => {
        const cell = cells[i] ?? "";
        const column = columns[name] as Column;
        const where = `${title}: ${label} × ${name}`;
        for (const via of ["http", "cli"] as const) {
          const t = await make(ds);
          try {
            if (via === "http") checkCell(cell, await column.send(t), column.read, where);
            else await checkCli(name, cell, column, t, `${where} (swarm)`);
          } finally {
            t.release();
            await t.d.call("DELETE", `/runs/${t.runId}`);
          }
        }
      };
      const names = Object.keys(columns);
      if (label === "`provisioning`") for (const [i, name] of names.entries()) await tryCell(name, i);
      else await Promise.all(names.map(tryCell));
    }
  }

  it("agent controls × agent states", async () => {
    await checkTable("Agent controls", AGENT_STATES, AGENT_COLUMNS);
  });

  it("approvals × request states", async () => {
    await checkTable("Approvals", REQUEST_STATES, REQUEST_COLUMNS);
  });

  it("run controls × run states", async () => {
    await checkTable("Run controls", RUN_STATES, RUN_COLUMNS);
  });

  it("a spawn a budget refuses: 202 over HTTP, said and exit 1 by swarm", async () => {
    const { awake } = ds;
    const created = await awake.call("POST", "/runs", {
      spec: { name: "frugal", script: [] },
      keepAlive: true,
      budget: { maxAgents: 0 },
    });
    const t: Target = { d: awake, runId: created.body.runId, agentId: created.body.rootAgentId, release: none };
    await waitForState(awake, t.agentId, "running");
    const refused = await spawnUnder(t);
    assert.equal(refused.status, 202);
    await waitForState(awake, refused.body.agentId, "done");
    assert.equal((await awake.call("GET", `/agents/${refused.body.agentId}`)).body.outcome, "budget-exceeded");
    await checkCli("spawn under it", "202 budget-exceeded", AGENT_COLUMNS["spawn under it"] as Column, t, "budget");
    await awake.call("DELETE", `/runs/${t.runId}`);
  });

  it("subtree: one line per member, then the count", async () => {
    const { awake } = ds;
    const created = await awake.call("POST", "/runs", { spec: { name: "lead", script: [] }, keepAlive: true });
    const root = created.body.rootAgentId;
    await waitForState(awake, root, "running");
    const t: Target = { d: awake, runId: created.body.runId, agentId: root, release: none };
    const kids: string[] = [];
    for (let i = 0; i < 3; i++) kids.push((await spawnUnder(t)).body.agentId);
    for (const kid of kids) await waitForState(awake, kid, "running");
    await awake.call("POST", `/agents/${kids[0]}/pause`);
    const env = { SWARM_URL: awake.url, SWARM_SPECS_DIR: dir };
    const paused = await swarmInProcess(["pause", root, "--subtree"], env);
    assert.equal(paused.code, 0, paused.stderr);
    assert.equal(
      paused.stdout,
      `${root} paused\n${kids[0]} already paused\n${kids[1]} paused\n${kids[2]} paused\npaused 3 agents, 1 already paused\n`,
    );
    const stopped = await swarmInProcess(["stop", root, "--subtree"], env);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(stopped.stdout.split("\n").at(-2), "stopped 4 agents");
    const again = await swarmInProcess(["stop", root, "--subtree"], env);
    assert.equal(again.stdout, `${root} already ended\n`, "ended members are no members; the named agent answers noop");
  });

  it("meets every row of the CLI table", () => {
    const unmet = CLI_ROWS.filter((row) => !row.met).map((row) => `${row.control} ${row.answer}: ${row.prints}`);
    assert.deepEqual(unmet, [], "rows of What the CLI says that no state led to");
  });
});
