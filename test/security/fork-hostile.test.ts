/**
 * Compare and adopt read and write files agents made: a hostile fork child (links to host files, a
 * FIFO, a huge file, names with a newline, a leading dash or bytes that are not UTF-8, a file swapped
 * for a link) and a hostile parent (a folder of its /work turned into a link to the host's /etc)
 * must neither hang nor slow the daemon, leak a host file into an answer or a sandbox, nor make
 * the daemon write outside the parent's /work. On a real runtime (`sandboxRuntime()`: process
 * unless SWARM_E2E_RUNTIME names docker).
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { createRuntime, type Daemon, sandboxRuntime, startDaemon } from "../support/daemon.ts";
import { pollUntil } from "../support/poll.ts";

const bash = (command: string) => ({ tool: "bash", args: { command } });
const HOSTILE = [
  "cd /work",
  "ln -s /etc/passwd passwd-link",
  "mkfifo pipe",
  "truncate -s 100M huge.bin",
  "printf x > \"$(printf 'new\\nline')\"",
  "printf y > ./-rf",
  "printf z > \"$(printf 'bad\\377')\"",
  "ln -s ../../../../etc/shadow d/escape",
  "mkdir evil && echo pwned > evil/owned-by-fork.txt",
  "rm victim.txt && ln -s /etc/hostname victim.txt",
].join("; ");

describe(`a hostile fork child and parent (${sandboxRuntime()} runtime)`, () => {
  let d: Daemon;
  before(async () => {
    d = await startDaemon({ runtime: (dataDir) => createRuntime(sandboxRuntime(), dataDir) });
  });
  after(() => d.stop());

  it("lists and adopts without following a link, reading a FIFO, or writing outside /work", async () => {
    const created = await d.call("POST", "/runs", {
      spec: {
        name: "root",
        script: [
          bash("mkdir /work/d; echo victim > /work/victim.txt"),
          { text: "ready" },
          bash("ln -s /etc /work/evil"),
          { text: "linked" },
          bash(
            "readlink passwd-link; cat evil/owned-by-fork.txt; readlink victim.txt; find . -mindepth 1 -maxdepth 1 -exec printf . \\; | wc -c | tr -d ' '; [ -d evil ] && [ ! -L evil ] && echo evil is a folder; cat ./-rf; readlink d/escape",
          ),
          { text: "{{lastToolResult}}" },
        ],
      },
      keepAlive: true,
      prompt: "set up",
    });
    const root = created.body.rootAgentId;
    const result = async (id: string) => (await d.call("GET", `/agents/${id}/result?wait=120`)).body.result;
    assert.equal(await result(root), "ready");
    const forked = await d.call("POST", `/agents/${root}/fork`, {
      prompts: ["be hostile"],
      spec: { script: [bash(HOSTILE), { text: "done: {{lastToolResult}}" }] },
    });
    assert.equal(forked.status, 202, JSON.stringify(forked.body));
    const child = forked.body.agentIds[0];
    assert.equal(await result(child), "done: (no output)");
    await d.call("POST", `/agents/${root}/prompt`, { text: "turn evil into a link to /etc" });
    await pollUntil(
      () => result(root),
      (text) => text === "linked",
      "the parent's link",
    );

    const started = Date.now();
    const changes = await d.call("GET", `/agents/${child}/changes`);
    assert.equal(changes.status, 200, JSON.stringify(changes.body));
    assert.ok(Date.now() - started < 20_000, "a FIFO did not hold the listing");
    const text = JSON.stringify(changes.body);
    assert.doesNotMatch(text, /root:x:0:0/, "no host file's content in the answer");
    const byPath = new Map(changes.body.files.map((f: { path: string }) => [f.path, f]));
    assert.deepEqual(
      [...byPath.keys()].sort(),
      [
        "-rf",
        "bad\uFFFD",
        "d/escape",
        "evil",
        "evil/owned-by-fork.txt",
        "huge.bin",
        "new\nline",
        "passwd-link",
        "pipe",
        "victim.txt",
      ].sort(),
    );
    const entry = (path: string) => byPath.get(path) as Record<string, unknown>;
    assert.deepEqual([entry("passwd-link").kind, entry("passwd-link").linkTarget], ["symlink", "/etc/passwd"]);
    assert.equal(entry("passwd-link").diff, undefined);
    assert.deepEqual([entry("pipe").kind, entry("pipe").diff], ["other", undefined]);
    assert.deepEqual([entry("huge.bin").size, entry("huge.bin").diff], [100 * 1024 * 1024, undefined]);
    assert.match(String(entry("huge.bin").noDiff), /larger than/);
    assert.deepEqual([entry("victim.txt").change, entry("victim.txt").kind], ["modified", "symlink"]);
    assert.match(String(entry("bad\uFFFD").noDiff), /not UTF-8/);
    assert.match(String(entry("new\nline").diff), /\+x/);

    const refused = await d.call("POST", `/agents/${root}/adopt`, { from: child });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error, /since the fork: evil;/);

    const adopted = await d.call("POST", `/agents/${root}/adopt`, { from: child, onConflict: "theirs" });
    assert.equal(adopted.status, 200, JSON.stringify(adopted.body));
    const skipped = Object.fromEntries(
      adopted.body.skipped.map((s: { path: string; reason: string }) => [s.path, s.reason]),
    );
    assert.match(skipped.pipe, /FIFO/);
    assert.match(skipped["huge.bin"], /larger than/);
    assert.match(skipped["bad\uFFFD"], /not UTF-8/);
    assert.ok(!existsSync("/etc/owned-by-fork.txt"), "nothing was written through the parent's link to /etc");
    assert.notEqual(readFileSync("/etc/hostname", "utf8"), "victim\n");

    await d.call("POST", `/agents/${root}/prompt`, { text: "look" });
    await pollUntil(
      () => result(root),
      (t) => t !== "linked",
      "the parent's look",
    );
    assert.equal(
      await result(root),
      "/etc/passwd\npwned\n/etc/hostname\n6\nevil is a folder\ny../../../../etc/shadow\n",
      "links adopted as links, the link to /etc replaced by the child's folder",
    );
    assert.equal((await d.call("GET", "/health")).status, 200);
  });
});
