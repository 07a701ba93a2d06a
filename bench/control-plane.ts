/**
 * Control-plane benchmark (issue 12): how fast the daemon spawns agents and cascades controls when
 * sandboxes cost nothing. A daemon process on the simulated runtime (`SWARM_RUNTIME=simulated`) gets
 * one run: a root and BENCH_CONTROL_AGENTS − 1 idle scripted children spawned over HTTP, then a
 * subtree pause, resume and stop of all of them from the root. Beside it, in this process, bare
 * XState actors of a trivial machine are created and sent the same events: the floor under a
 * control plane that runs one machine per agent. Meanwhile, the control latency one agent sees:
 * the first child (the probe) is paused and resumed in turn, each timed to its 202, while the
 * others start, and again once all of them run.
 * Not a test: nothing is asserted. `npx tsx bench/control-plane.ts`.
 * BENCH_CONTROL_AGENTS (1000), BENCH_CONTROL_CONCURRENCY (32 spawn requests in flight),
 * BENCH_CONTROL_REPS (3, a fresh daemon each), BENCH_CONTROL_PROBES (200 controls of the probe at rest).
 * BENCH_CONTROL_NODE_OPTIONS: extra node flags for the daemon (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`);
 * it is then ended with SIGTERM so a profile gets written.
 * The daemon's CPU time (utime + stime) per phase is printed to stderr: it holds up under load.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Json } from "../test/support/daemon.ts";
import { type DaemonProcess, spawnDaemon } from "../test/support/daemon-process.ts";
import { openEvents, type SseConnection } from "../test/support/sse-client.ts";
import { fmtMiB, fmtMs, fmtRate, fmtRatio, markdownTable, median, quantile, since } from "./stats.ts";
import { timeBareXState, type XStateTimings } from "./xstate-baseline.ts";

const AGENTS = Number(process.env.BENCH_CONTROL_AGENTS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONTROL_CONCURRENCY ?? 32);
const REPS = Number(process.env.BENCH_CONTROL_REPS ?? 3);
const PROBES = Number(process.env.BENCH_CONTROL_PROBES ?? 200);
const NODE_OPTIONS = process.env.BENCH_CONTROL_NODE_OPTIONS;
/** The pause between two controls of the probe: it is one agent's operator, not a load generator. */
const PROBE_GAP_MS = 20;
const IDLE = { name: "idle", script: [] };

interface DaemonTimings {
  /** First POST → every agent `running`. */
  spawnMs: number;
  /** First POST → the last spawn answered 202. */
  acceptMs: number;
  pauseMs: number;
  resumeMs: number;
  stopMs: number;
  /** Daemon CPU time (user + system) per phase, ms. */
  cpu: Record<"spawn" | "pause" | "resume" | "stop", number>;
  /** Daemon RSS growth per agent once all run, bytes. */
  rssPerAgent: number;
  /** Pause or resume of the probe, to its 202, while the other agents are spawned and start. */
  probeStarting: number[];
  /** The same once every agent runs. */
  probeAtRest: number[];
}

async function main(): Promise<void> {
  console.log(
    `# control-plane benchmark: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(`${AGENTS} agents, ${CONCURRENCY} spawn requests in flight, median of ${REPS} (a fresh daemon each)`);
  const daemon: DaemonTimings[] = [];
  const bare: XStateTimings[] = [];
  const children: XStateTimings[] = [];
  // Warm the baseline up (JIT), as the daemon is warm by the time its agents are timed.
  timeBareXState(AGENTS, false);
  timeBareXState(AGENTS, true);
  for (let rep = 0; rep < REPS; rep++) {
    daemon.push(await timeDaemon());
    bare.push(timeBareXState(AGENTS, false));
    children.push(timeBareXState(AGENTS, true));
    const last = daemon.at(-1)!;
    process.stderr.write(
      `rep ${rep + 1}/${REPS}: spawn ${fmtMs(last.spawnMs)}, pause ${fmtMs(last.pauseMs)}, resume ${fmtMs(last.resumeMs)}, stop ${fmtMs(last.stopMs)}; daemon CPU spawn ${fmtMs(last.cpu.spawn)} (${(last.cpu.spawn / AGENTS).toFixed(2)} ms/agent), pause ${fmtMs(last.cpu.pause)}, resume ${fmtMs(last.cpu.resume)}, stop ${fmtMs(last.cpu.stop)}\n`,
    );
  }
  console.log(`\n${render(daemon, bare, children)}`);
}

/** One fresh daemon process, one run of AGENTS agents, each operation timed from the client's side. */
async function timeDaemon(): Promise<DaemonTimings> {
  const dataDir = mkdtempSync(join(tmpdir(), "swarmd-bench-control-"));
  // Hibernation off: idle agents stay as they are for the whole measurement.
  const d = await spawnDaemon(dataDir, {
    SWARM_RUNTIME: "simulated",
    SWARM_HIBERNATE_AFTER_MS: "0",
    SWARM_LOG_LEVEL: "warn",
    ...(NODE_OPTIONS ? { NODE_OPTIONS } : {}),
  });
  try {
    const rssBefore = rssOf(d);
    const cpu0 = cpuMsOf(d);
    const start = performance.now();
    const created = await d.call("POST", "/runs", {
      spec: IDLE,
      keepAlive: true,
      budget: { maxAgents: AGENTS, spawnDepth: 1 },
    });
    if (created.status !== 202)
      throw new Error(`POST /runs answered ${created.status}: ${JSON.stringify(created.body)}`);
    const { runId, rootAgentId } = created.body as { runId: string; rootAgentId: string };
    const events = await openEvents(d.url, runId);
    try {
      const running = countRunning(events);
      const spawnOne = async () => {
        const reply = await d.call("POST", `/runs/${runId}/agents`, {
          parentAgentId: rootAgentId,
          spec: IDLE,
          keepAlive: true,
        });
        if (reply.status !== 202) throw new Error(`spawn answered ${reply.status}: ${JSON.stringify(reply.body)}`);
        return reply.body.agentId as string;
      };
      const probeId = await spawnOne();
      let next = 2;
      const spawnSome = async () => {
        while (next < AGENTS) {
          next++;
          await spawnOne();
        }
      };
      const starting = probe(d, probeId, () => running() < AGENTS);
      await Promise.all(Array.from({ length: CONCURRENCY }, spawnSome));
      const acceptMs = since(start);
      await events.waitUntil(() => running() >= AGENTS, 1_800_000, `${AGENTS} agents running`);
      const spawnMs = since(start);
      const rssPerAgent = (rssOf(d) - rssBefore) / AGENTS;
      const probeStarting = await starting;
      const cpu1 = cpuMsOf(d);
      let left = PROBES;
      const probeAtRest = await probe(d, probeId, () => left-- > 0);
      const control = async (op: string) => {
        const t = performance.now();
        const reply = await d.call("POST", `/agents/${rootAgentId}/${op}`, { scope: "subtree" });
        const ms = since(t);
        const applied = (reply.body?.results ?? []).filter((r: Json) => r.outcome === "applied").length;
        if (reply.status !== 202 || applied !== AGENTS)
          throw new Error(`subtree ${op} answered ${reply.status} with ${applied} of ${AGENTS} applied`);
        return ms;
      };
      const cpu2 = cpuMsOf(d);
      const pauseMs = await control("pause");
      const cpu3 = cpuMsOf(d);
      const resumeMs = await control("resume");
      const cpu4 = cpuMsOf(d);
      const stopMs = await control("stop");
      const cpu5 = cpuMsOf(d);
      const cpu = { spawn: cpu1 - cpu0, pause: cpu3 - cpu2, resume: cpu4 - cpu3, stop: cpu5 - cpu4 };
      return { spawnMs, acceptMs, pauseMs, resumeMs, stopMs, cpu, rssPerAgent, probeStarting, probeAtRest };
    } finally {
      events.close();
    }
  } finally {
    // Nothing of a simulated daemon outlives it; its shutdown is not what is measured.
    await d.kill(NODE_OPTIONS ? "SIGTERM" : "SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Pause and resume the probe in turn while `more()` says so, each timed to its 202; it ends
 * running (resumed), so the subtree controls after it find every agent as the others.
 */
async function probe(d: DaemonProcess, agentId: string, more: () => boolean): Promise<number[]> {
  const times: number[] = [];
  for (let paused = false; paused || more(); paused = !paused) {
    const op = paused ? "resume" : "pause";
    const t = performance.now();
    const reply = await d.call("POST", `/agents/${agentId}/${op}`, {});
    times.push(since(t));
    if (reply.status !== 202)
      throw new Error(`${op} of the probe answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    await sleep(PROBE_GAP_MS);
  }
  return times;
}

/** The number of agents the stream has seen reach `running`, read incrementally (the stream only grows). */
function countRunning(events: SseConnection): () => number {
  const running = new Set<string>();
  let read = 0;
  return () => {
    for (; read < events.messages.length; read++) {
      const m = events.messages[read]!;
      if (m.event === "agent_state_changed" && m.data.to === "running" && m.data.agentId) running.add(m.data.agentId);
    }
    return running.size;
  };
}

/** The daemon's user + system CPU time so far, ms (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMsOf(d: DaemonProcess): number {
  const stat = readFileSync(`/proc/${d.child.pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssOf(d: DaemonProcess): number {
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${d.child.pid}/status`, "utf8"))?.[1];
  return Number(kib) * 1024;
}

function render(daemon: DaemonTimings[], bare: XStateTimings[], children: XStateTimings[]): string {
  const med = <T>(rows: T[], pick: (row: T) => number) => median(rows.map(pick));
  const n = AGENTS.toLocaleString("en-US");
  const row = (label: string, ours: number, base: number, kids: number, rate = false) => [
    label,
    rate ? `${fmtMs(ours)} (${fmtRate((AGENTS / ours) * 1000, "agents/s")})` : fmtMs(ours),
    rate ? `${fmtMs(base)} (${fmtRate((AGENTS / base) * 1000, "actors/s")})` : fmtMs(base),
    fmtMs(kids),
    fmtRatio(ours, base),
  ];
  const table = markdownTable(
    [
      `${n} agents (median of ${REPS})`,
      "swarmd, simulated runtime, over HTTP",
      "bare XState actors",
      "XState, children of one actor",
      "swarmd / bare XState",
    ],
    [
      row(
        "spawn: first POST → all running",
        med(daemon, (t) => t.spawnMs),
        med(bare, (t) => t.createMs),
        med(children, (t) => t.createMs),
        true,
      ),
      row(
        "subtree pause of the root",
        med(daemon, (t) => t.pauseMs),
        med(bare, (t) => t.pauseMs),
        med(children, (t) => t.pauseMs),
      ),
      row(
        "subtree resume of the root",
        med(daemon, (t) => t.resumeMs),
        med(bare, (t) => t.resumeMs),
        med(children, (t) => t.resumeMs),
      ),
      row(
        "subtree stop of the root",
        med(daemon, (t) => t.stopMs),
        med(bare, (t) => t.stopMs),
        med(children, (t) => t.stopMs),
      ),
    ],
  );
  const all = (pick: (t: DaemonTimings) => number[]) => daemon.flatMap(pick);
  const starting = all((t) => t.probeStarting);
  const atRest = all((t) => t.probeAtRest);
  const latency = markdownTable(
    [`pause or resume of one agent among ${n}, to its 202`, "p50", "p99", "p99 / 50 ms target"],
    [
      [`while the others start (${starting.length})`, starting, quantile(starting, 0.99)] as const,
      [`all running (${atRest.length})`, atRest, quantile(atRest, 0.99)] as const,
    ].map(([label, samples, p99]) => [label, fmtMs(median(samples)), fmtMs(p99), fmtRatio(p99, 50)]),
  );
  const notes = [
    `spawn requests answered 202 after ${fmtMs(med(daemon, (t) => t.acceptMs))} (${fmtRate((AGENTS / med(daemon, (t) => t.acceptMs)) * 1000, "spawns/s")});`,
    `daemon RSS growth ${fmtMiB(med(daemon, (t) => t.rssPerAgent))} per idle agent.`,
  ];
  return `${table}\n\n${latency}\n\n${notes.join(" ")}`;
}

await main();
