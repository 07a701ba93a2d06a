/**
 * Sandbox benchmark (issue 3): median and p90 of provision, fork, freeze, thaw and close for the
 * process and docker runtimes, beside the raw `docker` CLI doing the same in the same run.
 * Not a test: nothing is asserted. `make bench`, or `npx tsx bench/sandbox.ts`.
 * BENCH_REPS (default 20) timed repetitions after BENCH_WARMUP (default 2) untimed ones.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { errorMessage } from "../src/errors.ts";
import { createDockerRuntime } from "../src/sandbox/docker/docker-runtime.ts";
import { defaultSandboxImage } from "../src/sandbox/docker/sandbox-image.ts";
import { createProcessRuntime } from "../src/sandbox/process/process-runtime.ts";
import { scriptGateway } from "../test/support/script-gateway.ts";
import { createDockerCli, dockerUnusable } from "./docker-cli.ts";
import { cliSubject, OPS, type Op, type RepTimings, runtimeSubject, type Subject } from "./sandbox-subjects.ts";
import { fmtMs, fmtRatio, markdownTable, median, p90 } from "./stats.ts";

const REPS = Number(process.env.BENCH_REPS ?? 20);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);

const LABELS: Record<Op, string> = {
  provision: "provision",
  fork: "fork",
  freeze: "freeze",
  thaw: "thaw",
  close: "close",
  closeFork: "close a fork (+ its image)",
};

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), "swarmd-bench-"));
  const image = defaultSandboxImage();
  const quiet = { info: () => undefined, warn: () => undefined };
  const processRuntime = createProcessRuntime({ dataDir: join(scratch, "process"), logger: quiet });
  // The parent's harness runs, so its model gateway is served, as the daemon does.
  const models = scriptGateway();
  const subjects: Subject[] = [runtimeSubject("process", models.wrap(processRuntime), { startHarness: true })];

  const noDocker = await dockerUnusable(image);
  if (noDocker === undefined) {
    subjects.push(
      runtimeSubject("docker", createDockerRuntime({ dataDir: join(scratch, "docker"), image }), {
        startHarness: false,
      }),
    );
    subjects.push(cliSubject(createDockerCli({ image, scratchDir: join(scratch, "cli"), tag: String(process.pid) })));
  } else {
    console.log(`docker rows skipped: ${noDocker}`);
  }

  let cleaned = false;
  const cleanUp = async () => {
    if (cleaned) return;
    cleaned = true;
    for (const s of subjects)
      await s.cleanUp().catch((err: unknown) => console.error(`clean-up of ${s.name}: ${errorMessage(err)}`));
    await models.close();
    rmSync(scratch, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)));

  console.log(
    `# sandbox benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(
    `process runtime: isolation ${processRuntime.isolation}, freezer ${processRuntime.freezer}; docker image ${image}`,
  );
  const samples = new Map<string, RepTimings[]>(subjects.map((s) => [s.name, []]));
  try {
    for (let i = 0; i < WARMUP + REPS; i++) {
      // Rotate who goes first so drift in the machine's load is shared out.
      for (let k = 0; k < subjects.length; k++) {
        const subject = subjects[(i + k) % subjects.length];
        if (!subject) continue;
        const timings = await subject.rep();
        if (i >= WARMUP) samples.get(subject.name)?.push(timings);
      }
      process.stderr.write(
        `\r${i < WARMUP ? "warm-up" : "rep"} ${i < WARMUP ? i + 1 : i - WARMUP + 1}/${i < WARMUP ? WARMUP : REPS}   `,
      );
    }
    process.stderr.write("\n");
  } finally {
    await cleanUp();
  }
  console.log(
    renderTable(
      subjects.map((s) => s.name),
      samples,
    ),
  );
}

function renderTable(names: string[], samples: Map<string, RepTimings[]>): string {
  const stat = (name: string, op: Op) => {
    const values = (samples.get(name) ?? []).map((t) => t[op]);
    return { median: median(values), p90: p90(values) };
  };
  const cell = (s: { median: number; p90: number }) => `${fmtMs(s.median)} (${fmtMs(s.p90)})`;
  const cli = names.includes("docker CLI") ? "docker CLI" : undefined;
  const ours = names.filter((n) => n !== cli);
  const header = [
    `operation (median (p90), n=${REPS})`,
    ...names.map((n) => (n === cli ? "raw docker CLI" : `${n} runtime`)),
  ];
  if (cli) header.push(...ours.map((n) => `${n} / CLI`));
  const rows = OPS.map((op) => {
    const row = [LABELS[op], ...names.map((n) => cell(stat(n, op)))];
    if (cli) row.push(...ours.map((n) => fmtRatio(stat(n, op).median, stat(cli, op).median)));
    return row;
  });
  return markdownTable(header, rows);
}

await main();
