import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { adoptLines } from "../../src/cli/adopt-command.ts";
import { changeTable } from "../../src/cli/changes-command.ts";
import { waitTable } from "../../src/cli/wait-command.ts";
import { freePort } from "../support/daemon-process.ts";
import { swarmInProcess, tempDir } from "./helpers.ts";

// What `swarm fork`, `changes`, `adopt` and `wait` print, and their command-line errors; the
// commands against a daemon are in forks.test.ts.

describe("swarm changes, adopt and wait lines", () => {
  it("changes: a heading with the fork point, one line per path with its sizes and diff's lines, why a file has no diff under it", () => {
    const lines = changeTable({
      agentId: "a_2",
      forkedFrom: { agentId: "a_1", forkPoint: { turn: 3 } },
      files: [
        { path: "bin/blob", change: "added", kind: "file", size: 2048, baseSize: null, noDiff: "binary" },
        { path: "docs", change: "deleted", kind: "dir", size: null, baseSize: 4096 },
        { path: "latest", change: "modified", kind: "symlink", size: 6, baseSize: 4, linkTarget: "v2\nv3" },
        {
          path: "notes\n.md",
          change: "modified",
          kind: "file",
          size: 30,
          baseSize: 20,
          // A removed line "-- x" reads "--- x" in the hunk: counted, not taken for a header.
          diff: "--- a/notes\n.md\n+++ b/notes\n.md\n@@ -1,3 +1,3 @@\n keep\n--- x\n+++ y\n+z\n",
        },
      ],
      diffBytes: 60,
    });
    assert.deepEqual(lines, [
      "a_2 changed 4 paths in /work since its fork from a_1 at turn 3",
      "CHANGE    KIND     SIZE  BASE  DIFF   PATH",
      "added     file     2048  -     none   bin/blob",
      "deleted   dir      -     4096  -      docs",
      "modified  symlink  6     4     -      latest -> v2 v3",
      "modified  file     30    20    +2 -1  notes .md",
      "",
      "no diff of bin/blob: binary",
    ]);
    assert.equal(
      changeTable({
        agentId: "a_3",
        forkedFrom: { agentId: "a_1", forkPoint: { turn: 1, toolCallId: "toolu_9" } },
        files: [{ path: "x", change: "added", kind: "file", size: 0, baseSize: null, diff: "" }],
        diffBytes: 0,
      })[0],
      "a_3 changed 1 path in /work since its fork from a_1 in turn 1, at its spawn_agent call toolu_9",
    );
  });

  it("wait: the winner first when there is one, then agent, state, outcome and the result on one clipped line", () => {
    assert.deepEqual(
      waitTable({
        results: [
          { agentId: "a_1", state: "settled", outcome: "failed", result: "line one\nline two" },
          { agentId: "a_22", state: "pending", outcome: null, result: null },
          { agentId: "a_3", state: "settled", outcome: "success", result: "x".repeat(70) },
        ],
        winner: null,
      }),
      [
        "AGENT  STATE    OUTCOME  RESULT",
        "a_1    settled  failed   line one line two",
        "a_22   pending  -        -",
        `a_3    settled  success  ${"x".repeat(59)}…`,
      ],
    );
    assert.deepEqual(
      waitTable({ results: [{ agentId: "a_3", state: "settled", outcome: "success", result: "" }], winner: "a_3" }),
      ["winner a_3", "AGENT  STATE    OUTCOME  RESULT", "a_3    settled  success  -"],
    );
  });

  it("adopt: what was applied, then what was skipped and why; nothing to apply says so", () => {
    assert.deepEqual(
      adoptLines({
        agentId: "a_1",
        from: "a_2",
        files: [
          { path: "src/a.ts", change: "added" },
          { path: "old\nname", change: "deleted" },
        ],
        skipped: [{ path: "pipe", reason: "a FIFO, socket or device is never copied" }],
      }),
      [
        "a_1 adopted 2 changes of a_2",
        "added    src/a.ts",
        "deleted  old name",
        "skipped  pipe: a FIFO, socket or device is never copied",
      ],
    );
    assert.deepEqual(adoptLines({ agentId: "a_1", from: "a_2", files: [], skipped: [] }), [
      "a_1 adopted nothing of a_2: its /work already holds every change a_2 made since the fork",
    ]);
  });
});

describe("swarm fork, changes, adopt and wait: command-line errors", () => {
  let dir: string;
  before(() => {
    dir = tempDir("swarm-forks-args-");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("exits 2 with the command's usage before calling the service; a valid line gets as far as the service", async () => {
    const env = { SWARM_URL: `http://127.0.0.1:${await freePort()}` };
    const list = join(dir, "list.json");
    writeFileSync(list, "[1, 2]");
    const forkUsage =
      "usage: swarm fork <agentId> (--prompt TEXT... | --count N --prompt TEXT) [--spec CHANGES.json | -] [--name NAME] [--no-keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N] [--max-cost-usd X] [--json]\n";
    for (const [args, problem] of [
      [["fork"], /^swarm: missing <agentId>\nusage: swarm fork <agentId> /],
      [["fork", "a_1"], `swarm: missing --prompt: one child per --prompt, or --count N with one\n${forkUsage}`],
      [["fork", "a_1", "a_2", "--prompt", "x"], /^swarm: unexpected argument "a_2"\n/],
      [["fork", "a_1", "--count", "2"], /missing --prompt/],
      [["fork", "a_1", "--count", "0", "--prompt", "x"], /^swarm: --count must be an integer 1\.\.32, not "0"\n/],
      [["fork", "a_1", "--count", "33", "--prompt", "x"], /--count must be an integer 1\.\.32, not "33"/],
      [
        ["fork", "a_1", "--count", "2", "--prompt", "x", "--prompt", "y"],
        /^swarm: --count takes one --prompt, which every child is given\n/,
      ],
      [["fork", "a_1", ...Array.from({ length: 33 }, (_, i) => ["--prompt", `p${i}`]).flat()], /at most 32 children/],
      [["fork", "a_1", "--prompt", "x", "--spec", join(dir, "none.json")], /^swarm: cannot read .*none\.json/],
      [["fork", "a_1", "--prompt", "x", "--spec", list], /--spec .*list\.json must hold a JSON object/],
      [["fork", "a_1", "--prompt", "x", "--keep-alive"], /unknown option --keep-alive; did you mean --no-keep-alive\?/],
      [["fork", "a_1", "--prompt", "x", "--max-tokens", "lots"], /--max-tokens must be a whole number/],
      [["changes"], "swarm: missing <agentId>\nusage: swarm changes <agentId> [--diff] [--json]\n"],
      [["changes", "a_1", "a_2"], /unexpected argument "a_2"/],
      [["changes", "a_1", "--diffs"], /unknown option --diffs; did you mean --diff\?/],
      [
        ["adopt", "a_1"],
        "swarm: missing --from <childId>: the fork child to adopt from\nusage: swarm adopt <agentId> --from <childId> [--theirs] [--json]\n",
      ],
      [["adopt", "--from", "a_2"], /^swarm: missing <agentId>\n/],
      [["adopt", "a_1", "--from"], /--from needs a value/],
      [["adopt", "a_1", "--from", "a_2", "--their"], /did you mean --theirs\?/],
      [
        ["wait", "r_1"],
        "swarm: missing <agentId>\nusage: swarm wait <runId> <agentId>... [--first] [--stop-others] [--timeout MS] [--json]\n",
      ],
      [["wait"], /^swarm: missing <runId>\n/],
      [["wait", "r_1", "a_1", "--timeout", "0"], /^swarm: --timeout must be an integer 1\.\.600000, not "0"\n/],
      [["wait", "r_1", "a_1", "--timeout", "600001"], /--timeout must be an integer 1\.\.600000/],
      [["wait", "r_1", ...Array.from({ length: 257 }, (_, i) => `a_${i}`)], /at most 256 agents: 257 given/],
      [["wait", "r_1", "a_1", "--mode", "first"], /unknown option --mode/],
    ] as const) {
      const bad = await swarmInProcess([...args], env);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.stderr}`);
      if (typeof problem === "string") assert.equal(bad.stderr, problem, args.join(" "));
      else assert.match(bad.stderr, problem, args.join(" "));
      assert.equal(bad.stdout, "");
    }
    for (const args of [
      ["fork", "a_1", "--prompt", "x", "--prompt", "y", "--name", "copy", "--no-keep-alive", "--max-cost-usd", "1"],
      ["fork", "a_1", "--count", "32", "-p", "x"],
      ["changes", "a_1", "--diff"],
      ["adopt", "a_1", "--from", "a_2", "--theirs", "--json"],
      ["wait", "r_1", "a_1", "a_2", "--first", "--stop-others", "--timeout", "600000"],
    ]) {
      assert.equal((await swarmInProcess(args, env)).code, 3, `${args.join(" ")} is a valid command line`);
    }
    const help = await swarmInProcess(["--help"], env);
    assert.match(
      help.stdout,
      /\n {2}swarm fork <agentId> \(--prompt TEXT\.\.\. \| --count N --prompt TEXT\)[\s\S]*\n {2}swarm changes <agentId> \[--diff\] +what a fork child changed[\s\S]*\n {2}swarm adopt <agentId> --from <childId> \[--theirs\]\n +apply a fork child's changes[\s\S]*\n {2}swarm wait <runId> <agentId>\.\.\. \[--first\] \[--stop-others\] \[--timeout MS\]\n +wait for several agents/,
    );
    assert.equal((await swarmInProcess(["fork", "--help"], env)).stdout, forkUsage);
    assert.equal(
      (await swarmInProcess(["wait", "-h"], env)).stdout,
      "usage: swarm wait <runId> <agentId>... [--first] [--stop-others] [--timeout MS] [--json]\n",
    );
    const typo = await swarmInProcess(["adpot", "a_1"], env);
    assert.deepEqual(
      [typo.code, typo.stderr.split("\n")[0]],
      [2, 'swarm: unknown command "adpot"; did you mean swarm adopt?'],
    );
  });
});
