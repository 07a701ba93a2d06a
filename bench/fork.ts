/**
 * Fork benchmark (issue 25), each figure beside a baseline measured in the same run, on the process
 * and the docker runtime:
 * (i) 8 forks of an idle agent with a 100 MiB /work and a 200-message session (`POST
 *     /agents/:agentId/fork`, 8 prompts) until all 8 are `running`, beside one plain spawn of the
 *     same agent (`POST /runs/:runId/agents`, its spec, a prompt) until it is `running`;
 * (ii) the file part alone: the fork point (one frozen copy of /work) and 8 children's /work on it
 *     (`HostForks`, the code both runtimes use; the children made as many at once as the daemon's
 *     start line makes sandboxes), beside one copy of /work (`copyTree`, what a plain spawn does);
 * (iii) adopt of 100 changed files (`POST /agents/:agentId/adopt`), beside copying those 100 files
 *     with `cp`.
 * `running` is the agent's `agent_state_changed` in the ledger. Not a test: nothing is asserted.
 * `npx tsx bench/fork.ts`. BENCH_ONLY=process,docker (default both), BENCH_FORK_REPS (5),
 * BENCH_FORK_MIB (100), BENCH_FORK_COPIES (8).
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { DEFAULT_START_CONCURRENCY } from "../src/config.ts";
import { errorMessage } from "../src/errors.ts";
import { copyTree } from "../src/sandbox/copy-tree.ts";
import { createDockerRuntime } from "../src/sandbox/docker/docker-runtime.ts";
import { defaultSandboxImage } from "../src/sandbox/docker/sandbox-image.ts";
import { HostForks } from "../src/sandbox/host/host-forks.ts";
import { createProcessRuntime } from "../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../src/sandbox/runtime.ts";
import { type Daemon, startDaemon } from "../test/support/daemon.ts";
import { dockerUnusable } from "./docker-cli.ts";
import { runningAt } from "./running-watch.ts";
import { env, fmtMs, fmtRatio, markdownTable, median, since } from "./stats.ts";

const only = new Set((process.env.BENCH_ONLY ?? "process,docker").split(","));
/** Which parts run: `fork` (the daemon's forks), `files` (the file part alone), `adopt`. */
const parts = new Set((process.env.BENCH_FORK_PARTS ?? "fork,files,adopt").split(","));
const REPS = env("BENCH_FORK_REPS", 5);
const MIB = env("BENCH_FORK_MIB", 100);
const COPIES = env("BENCH_FORK_COPIES", 8);
/** A turn of 99 tool calls: the prompt, 99 calls and their results, and the answer make 200 messages. */
const TOOL_CALLS = 99;
const ADOPTED_FILES = 100;

const bash = (command: string) => ({ tool: "bash", args: { command } });

/** The forked agent: its first turn writes `MIB` MiB into /work in `TOOL_CALLS` calls (200 messages in all). */
function heavySpec() {
  // In bytes: busybox's head (the docker image's) takes no K suffix.
  const perCall = Math.ceil((MIB * 1024 * 1024) / TOOL_CALLS);
  const script = Array.from({ length: TOOL_CALLS }, (_, i) =>
    bash(`mkdir -p /work/data; head -c ${perCall} /dev/urandom > /work/data/f${String(i).padStart(3, "0")}.bin`),
  );
  return { name: "heavy", script: [...script, { text: "ready" }, { text: "{{lastUserMessage}}" }] };
}

async function call(d: Daemon, method: string, path: string, body?: unknown) {
  const answer = await d.call(method, path, body);
  if (answer.status >= 300)
    throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

interface RuntimeRows {
  fork: string[];
  files: string[];
  adopt: string[];
}

async function benchRuntime(kind: "process" | "docker", make: (dataDir: string) => SandboxRuntime, scratch: string) {
  const dataDir = join(scratch, kind);
  mkdirSync(dataDir, { recursive: true });
  const d = await startDaemon({ dataDir, runtime: () => make(dataDir), limits: undefined });
  const forks: number[] = [];
  const spawns: number[] = [];
  const copies: number[] = [];
  const fileParts: number[] = [];
  let adoptMs = Number.NaN;
  let cpMs = Number.NaN;
  try {
    process.stderr.write(`${kind}: the forked agent writes ${MIB} MiB in ${TOOL_CALLS} tool calls\n`);
    const created = await call(d, "POST", "/runs", {
      spec: heavySpec(),
      keepAlive: true,
      prompt: "fill /work",
      budget: { maxAgents: 1000 },
    });
    const { runId, rootAgentId: root } = created;
    const settled = await call(d, "GET", `/agents/${root}/result?wait=240`);
    if (settled.result !== "ready") throw new Error(`the forked agent answered ${JSON.stringify(settled)}`);
    const stats = (await call(d, "GET", `/agents/${root}`)).sessionStats as { totalMessages?: number } | undefined;
    process.stderr.write(`${kind}: its session holds ${stats?.totalMessages ?? "?"} messages\n`);

    // Children answer their prompt with one scripted step (not the forked agent's script again).
    const light = { name: "light", script: [{ text: "{{lastUserMessage}}" }] };
    const watch = runningAt(d.ledger, runId);
    try {
      for (let rep = 0; parts.has("fork") && rep < REPS; rep++) {
        process.stderr.write(`\r${kind}: rep ${rep + 1}/${REPS}   `);
        const forkStart = Date.now();
        const { agentIds } = await call(d, "POST", `/agents/${root}/fork`, {
          prompts: Array.from({ length: COPIES }, (_, i) => `try ${i}`),
          spec: { script: light.script },
          keepAlive: true,
        });
        const at = await Promise.all(agentIds.map((id: string) => watch.of(id)));
        forks.push(Math.max(...at) - forkStart);

        const spawnStart = Date.now();
        const spawned = await call(d, "POST", `/runs/${runId}/agents`, {
          parentAgentId: root,
          spec: light,
          prompt: "plain",
          keepAlive: true,
        });
        spawns.push((await watch.of(spawned.agentId)) - spawnStart);
        for (const id of [...agentIds, spawned.agentId]) await call(d, "POST", `/agents/${id}/stop`);
      }
    } finally {
      watch.stop();
    }
    process.stderr.write("\n");

    // The file part alone, on the forked agent's /work as the host has it.
    const work = join(dataDir, "sandboxes", (await call(d, "GET", `/agents/${root}`)).sandboxId, "work");
    const files = new HostForks(join(scratch, `${kind}-files`), () => undefined);
    for (let rep = 0; parts.has("files") && rep < REPS; rep++) {
      const target = join(scratch, `${kind}-copy-${rep}`);
      mkdirSync(target);
      let start = performance.now();
      await copyTree(work, target, AbortSignal.timeout(600_000));
      copies.push(since(start));
      const children = Array.from({ length: COPIES }, () => {
        const sandboxId = randomUUID();
        const child = join(scratch, `${kind}-child-${sandboxId}`);
        mkdirSync(join(child, "work"), { recursive: true });
        mkdirSync(join(child, "control"));
        return { sandboxId, work: join(child, "work"), control: join(child, "control") };
      });
      const baseId = randomUUID();
      start = performance.now();
      await files.snapshot(
        { work, control: join(scratch, "no-control") },
        baseId,
        `bench-${kind}`,
        AbortSignal.timeout(600_000),
        COPIES,
      );
      // As the daemon makes them: each child in its start slot, DEFAULT_START_CONCURRENCY at once.
      let next = 0;
      await Promise.all(
        Array.from({ length: DEFAULT_START_CONCURRENCY }, async () => {
          for (let i = next++; i < children.length; i = next++)
            await files.makeChild({ baseId, copy: i + 1, of: COPIES }, children[i]!, {}, AbortSignal.timeout(600_000));
        }),
      );
      fileParts.push(since(start));
      for (const child of children) await files.releaseChild(child.sandboxId, child.work);
      await files.dropRun(`bench-${kind}`);
      rmSync(target, { recursive: true, force: true });
    }

    // Adopt: a fork child changes 100 files; its parent adopts them.
    if (!parts.has("adopt")) return rowsOf(kind, { forks, spawns, fileParts, copies, adoptMs, cpMs });
    const [child] = (
      await call(d, "POST", `/agents/${root}/fork`, {
        prompts: ["change"],
        spec: {
          script: [
            bash(
              `cd /work/data && for i in $(seq 0 ${ADOPTED_FILES - 1}); do echo changed >> f$(printf %03d $i).bin; done`,
            ),
            { text: "changed" },
          ],
        },
      })
    ).agentIds;
    await call(d, "GET", `/agents/${child}/result?wait=240`);
    const start = performance.now();
    const adopted = await call(d, "POST", `/agents/${root}/adopt`, { from: child, onConflict: "theirs" });
    adoptMs = since(start);
    if (adopted.files.length !== ADOPTED_FILES) throw new Error(`adopted ${adopted.files.length} files`);
    const target = join(scratch, `${kind}-cp`);
    mkdirSync(target);
    const cpStart = performance.now();
    execFileSync("cp", ["-a", join(work, "data"), target]);
    cpMs = since(cpStart) * (ADOPTED_FILES / TOOL_CALLS);
    await call(d, "DELETE", `/runs/${runId}?purge=true`);
  } finally {
    await d.stop();
  }
  return rowsOf(kind, { forks, spawns, fileParts, copies, adoptMs, cpMs });
}

interface Measured {
  forks: number[];
  spawns: number[];
  fileParts: number[];
  copies: number[];
  adoptMs: number;
  cpMs: number;
}

function rowsOf(kind: string, m: Measured): RuntimeRows {
  return {
    fork: [
      `${kind}: ${COPIES} forks → all running`,
      fmtMs(median(m.forks)),
      `${fmtMs(median(m.spawns))} (one plain spawn → running)`,
      fmtRatio(median(m.forks), median(m.spawns)),
    ],
    files: [
      `${kind}: fork point + ${COPIES} children's /work`,
      fmtMs(median(m.fileParts)),
      `${fmtMs(median(m.copies))} (one copy of /work)`,
      fmtRatio(median(m.fileParts), median(m.copies)),
    ],
    adopt: [
      `${kind}: adopt ${ADOPTED_FILES} changed files`,
      fmtMs(m.adoptMs),
      `${fmtMs(m.cpMs)} (\`cp -a\` of those files)`,
      fmtRatio(m.adoptMs, m.cpMs),
    ],
  };
}

async function main(): Promise<void> {
  console.log(
    `# fork benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}; ${MIB} MiB /work, ${COPIES} copies, n=${REPS}`,
  );
  const scratch = mkdtempSync(join(tmpdir(), "swarmd-bench-fork-"));
  const quiet = { info: () => undefined, warn: () => undefined };
  const results: RuntimeRows[] = [];
  try {
    if (only.has("process"))
      results.push(
        await benchRuntime("process", (dataDir) => createProcessRuntime({ dataDir, logger: quiet }), scratch),
      );
    if (only.has("docker")) {
      const reason = await dockerUnusable(defaultSandboxImage());
      if (reason) console.log(`docker: skipped (${reason})`);
      else results.push(await benchRuntime("docker", (dataDir) => createDockerRuntime({ dataDir }), scratch));
    }
  } catch (err) {
    console.error(`fork benchmark failed: ${errorMessage(err)}`);
    process.exitCode = 1;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const header = [`median, n=${REPS}`, "swarmd", "baseline", "swarmd / baseline"];
  console.log(
    `\n## Forks of an idle agent\n\n${markdownTable(
      header,
      results.map((r) => r.fork),
    )}`,
  );
  console.log(
    `\n## The file part alone\n\n${markdownTable(
      header,
      results.map((r) => r.files),
    )}`,
  );
  console.log(
    `\n## Adopt\n\n${markdownTable(
      ["one run", "swarmd", "baseline", "swarmd / baseline"],
      results.map((r) => r.adopt),
    )}`,
  );
}

await main();
