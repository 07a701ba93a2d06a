import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { type DaemonProcess, freePort, spawnDaemon } from "../support/daemon-process.ts";
import { type BlockOutcome, blockOutcomes, driverScript, type ShellBlock, shellBlocks } from "./shell-blocks.ts";

/**
 * Every shell block of the README and of the pages under docs/ runs here, against a real daemon
 * (a process of its own on the simulated runtime, a free loopback port, a fresh data folder), or
 * says on the line above it why it cannot (`<!-- not run: … -->`). A page's blocks run in order in
 * one bash, as a reader would paste them, with `SWARM_PORT` set to the daemon's port (the variable
 * the README's first block reads) and `swarm`, `swarmd` and `swarmd-mcp` on PATH as `make link`
 * puts them. Each block must end without a failed command (what `set -e` would stop at), and its
 * output must hold every `<!-- expect: … -->` text written above it.
 */
const PAGES = [
  "README.md",
  ...readdirSync(join(SWARMD_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const PAGE_TIMEOUT_MS = 240_000;

describe("the shell blocks of the README and the docs pages", { timeout: PAGES.length * PAGE_TIMEOUT_MS }, () => {
  let root: string;
  let daemon: DaemonProcess;
  let reader: Reader;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "swarmd-docs-"));
    daemon = await spawnDaemon(join(root, "data"), { SWARM_RUNTIME: "simulated", SWARM_LOG_LEVEL: "warn" });
    reader = readerShell(root, new URL(daemon.url).port, await freePort());
  });
  after(async () => {
    await daemon?.kill("SIGTERM");
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("finds the pages' blocks, and the README starts with make run and make test", () => {
    const readme = shellBlocks("README.md", read("README.md"));
    assert.ok(readme.filter((b) => !b.notRun).length >= 4, "the README's first session runs here");
    assert.match(read("README.md").split("\n").slice(0, 6).join("\n"), /```sh\nmake run .*\nmake test /);
    for (const page of PAGES) {
      for (const block of shellBlocks(page, read(page))) {
        if (block.notRun !== undefined)
          assert.ok(block.notRun.length > 0, `${page}:${block.line}: a "not run" note says why`);
      }
    }
  });

  for (const page of PAGES) {
    const blocks = shellBlocks(page, read(page));
    if (blocks.length === 0) continue;
    it(`${page}: ${blocks.length} shell blocks`, async (t) => {
      const run = blocks.filter((b) => b.notRun === undefined);
      const outcomes = run.length > 0 ? await runPage(page, run, root, reader) : [];
      for (const block of blocks) {
        const name = `${page}:${block.line} ${firstCommand(block)}`;
        if (block.notRun !== undefined) {
          await t.test(name, { skip: `not run: ${block.notRun}` }, () => {});
          continue;
        }
        const outcome = outcomes[run.indexOf(block)] as BlockOutcome;
        await t.test(name, () => {
          const shown = `\n--- stdout ---\n${tail(outcome.stdout)}\n--- stderr ---\n${tail(outcome.stderr)}`;
          assert.ok(outcome.ran, `the block did not run to its end (the shell stopped before it)${shown}`);
          assert.ok(!outcome.failed, `a command of the block failed${shown}`);
          for (const text of block.expect) assert.ok(outcome.stdout.includes(text), `stdout has ${text}${shown}`);
        });
      }
    });
  }
});

function read(page: string): string {
  return readFileSync(join(SWARMD_ROOT, page), "utf8");
}

/**
 * What a reader's shell has: a folder of its own standing for the checkout (the bins, scripts and
 * sources linked in, so files a block writes land there), `swarm`, `swarmd` and `swarmd-mcp` on
 * PATH, swarmd's Node first, a home of its own (saved specs), and the daemon's port.
 */
interface Reader {
  cwd: string;
  env: Record<string, string>;
}

function readerShell(root: string, port: string, simPort: number): Reader {
  const checkout = join(root, "checkout");
  const bin = join(root, "bin");
  const home = join(root, "home");
  for (const dir of [checkout, bin, home]) mkdirSync(dir);
  for (const name of ["bin", "scripts", "src", "node_modules", "package.json", "tsconfig.json", "Makefile"])
    symlinkSync(join(SWARMD_ROOT, name), join(checkout, name));
  for (const name of ["swarm", "swarmd", "swarmd-mcp"])
    symlinkSync(join(SWARMD_ROOT, "bin", `${name}.js`), join(bin, name));
  const env = {
    PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: home,
    TMPDIR: tmpdir(),
    LANG: "C.UTF-8",
    SWARM_PORT: port,
    // docs/simulated.md starts a second daemon: on a free port, not its default 4610.
    SIM_PORT: String(simPort),
  };
  return { cwd: checkout, env };
}

/** Runs a page's blocks in one bash in the reader's checkout; each block's output and result. */
async function runPage(page: string, blocks: ShellBlock[], root: string, reader: Reader): Promise<BlockOutcome[]> {
  const script = join(root, `${page.replaceAll("/", "_")}.sh`);
  writeFileSync(script, driverScript(blocks));
  const shell = spawn("bash", [script], {
    cwd: reader.cwd,
    env: reader.env,
    detached: true, // its own process group, so whatever a block left running is ended with it
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  shell.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  shell.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => endGroup(shell.pid), PAGE_TIMEOUT_MS);
  await new Promise((resolve) => shell.once("exit", resolve));
  clearTimeout(timer);
  endGroup(shell.pid);
  await new Promise((resolve) => (shell.stdout.closed ? resolve(null) : shell.stdout.once("close", resolve)));
  return blockOutcomes(blocks.length, stdout, stderr);
}

function endGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group has ended already
  }
}

/** The block's first line worth naming it by: not a comment, nor the lines most pages start with. */
function firstCommand(block: ShellBlock): string {
  const boilerplate = /^\s*(#|$|export SWARM_URL=|json\(\) )/;
  const line = block.code.split("\n").find((l) => !boilerplate.test(l)) ?? "";
  return line.length > 60 ? `${line.slice(0, 57)}...` : line;
}

function tail(text: string): string {
  return text.length > 3000 ? `…${text.slice(-3000)}` : text;
}
