import type { InspectionEvent, Observer } from "xstate";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { SandboxLimits, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { AgentDirectory } from "../agent-directory.ts";
import type { StartQueue } from "../start-queue.ts";

export interface ServiceConfig {
  dataDir: string;
  /** Quiet-turn limit (SWARM_TURN_MAX_MS). */
  turnMaxMs: number;
  /** The most any sandbox gets (SWARM_LIMIT_*): the ceiling of every run's root. */
  limits: SandboxLimits;
  /** How long a control waits for one member's answer (SWARM_MEMBER_TIMEOUT_MS); default 60 s. */
  memberTimeoutMs?: number;
  /** Idle time after which an agent's harness hibernates (SWARM_HIBERNATE_AFTER_MS); 0 or absent: never. */
  hibernateAfterMs?: number;
}

/** The run, and agent, a log line is about. */
export interface LogSubject {
  runId: string;
  agentId?: string;
}

/** What a run needs from the daemon. */
export interface RunDeps {
  config: ServiceConfig;
  runtime: SandboxRuntime;
  ledger: Ledger;
  results: ResultStore;
  /** Inspection hook for the run's actors (SWARM_INSPECT=1). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** `about`: the run (and agent) a line is about, so the log can join its trace. */
  log(message: string, about?: LogSubject): void;
  /** Which run each agent belongs to: the run adds every agent it takes on. */
  directory: AgentDirectory;
  /** The daemon's model gateway: every agent's model calls go through it. */
  gateway: ModelGateway;
  /** The daemon's admission control for sandbox and harness starts, shared by every run. */
  starts: StartQueue;
  /** Told of each attempt to reopen a harness connection (metrics). */
  onHarnessReconnect?: () => void;
}
