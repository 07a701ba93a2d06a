import type { Duplex } from "node:stream";
import type { TreeRef, WorkChange, WorkTree } from "./work-tree.ts";

/**
 * The runtimes swarmd ships (`SWARM_RUNTIME`). `process` is the embedded default; `simulated` keeps
 * sandboxes in the daemon's memory (`src/sandbox/memory/`: test suites, simulations); `cluster`
 * places each sandbox on one machine of a Docker Swarm (`src/sandbox/cluster/`).
 */
export type RuntimeKind = "process" | "docker" | "simulated" | "cluster";

/** What a runtime knows about one sandbox it owns. */
export interface SandboxInfo {
  sandboxId: string;
  runId: string;
  agentId: string;
  /**
   * `running`: processes or container alive and not frozen. `frozen`: suspended in place.
   * `hibernated`: its harness was ended on purpose (`hibernate`), its files and session kept.
   * `gone`: the sandbox's folder or container record exists but its processes/container vanished.
   */
  status: "running" | "frozen" | "hibernated" | "gone";
  /** Why a `gone` sandbox's processes ended, when the runtime knows: a limit it hit, or a quota it broke. */
  reason?: string;
  /** Id of the node (`NodeInfo.id`) the sandbox runs on: `local` on the single-host runtimes. */
  node?: string;
}

/** The one node of a runtime without a cluster: the daemon's own machine. */
export const LOCAL_NODE_ID = "local";

/**
 * One machine sandboxes run on, as the runtime sees it now. Runtimes without a cluster answer one
 * node, `local`; the cluster runtime answers one per node of its swarm.
 */
export interface NodeInfo {
  /** The swarm's node id; `local` on the single-host runtimes. */
  id: string;
  hostname: string;
  /** The swarm's status of the node (`ready` on the single-host runtimes). */
  state: "ready" | "down" | "unknown" | "disconnected";
  /** Whether the swarm places new work on it (`active`), keeps its work but places none (`pause`), or moves its work off (`drain`). */
  availability: "active" | "pause" | "drain";
  /** Live (not `gone`) sandboxes of this data folder on the node. */
  sandboxes: number;
  /** The node's capacity: its CPU cores and memory. */
  cpus: number;
  memoryMiB: number;
  /** The sums of the limits (`SandboxLimits.cpus`, `.memoryMiB`) of this data folder's live sandboxes on the node. */
  reservedCpus: number;
  reservedMemoryMiB: number;
  /** Whether the daemon reaches the node's engine (always `reachable` on the single-host runtimes). */
  engine: "reachable" | "unreachable";
  /** Why the node is unreachable or unusable, when the runtime knows (e.g. "image could not be loaded: ..."). */
  reason?: string;
}

/**
 * What a runtime that watches its nodes (`SandboxRuntime.watch`) reports about one sandbox:
 * `unreachable` / `reachable` when the daemon loses / regains its node's engine (the sandbox may
 * still run there), `lost` when the sandbox is gone with its node (down, or drained).
 */
export type SandboxChange =
  | ({ type: "unreachable" } & SandboxPlace)
  | ({ type: "reachable" } & SandboxPlace)
  | ({ type: "lost"; reason: string } & SandboxPlace);

/** Which sandbox a change is about, whose agent, and where it runs. */
export interface SandboxPlace {
  sandboxId: string;
  runId: string;
  agentId: string;
  node: string;
}

/**
 * Resource limits of one sandbox, already resolved (daemon defaults, tightened by the parent's and
 * the spec's `limits`). A sandbox over a limit fails inside itself; the daemon keeps working.
 */
export interface SandboxLimits {
  /** Most processes (and threads) alive at once. */
  pids: number;
  /** Memory in MiB; swap is not allowed on top of it. */
  memoryMiB: number;
  /** CPU time as a number of cores (0.5 = half of one core). */
  cpus: number;
  /** Size of `/work` in MiB. */
  diskMiB: number;
  /** Size of the sandbox's `/tmp` (a tmpfs, counted in its memory) in MiB. */
  tmpMiB: number;
}

/** Everything a runtime needs to create a sandbox. */
export interface ProvisionRequest {
  /** UUID chosen by the caller, so a crash between "asked" and "answered" can be reconciled. */
  sandboxId: string;
  runId: string;
  agentId: string;
  /** The agent spec as validated JSON; written where the harness reads it. */
  spec: Record<string, unknown>;
  /** Extra environment for the agent (spec.env). The daemon's own environment is never passed. */
  env?: Record<string, string>;
  /** Give the sandbox network access. Default false: no network. */
  network?: boolean;
  /** Container image (docker only; ignored by `process`). */
  image?: string;
  /** Resource limits; a runtime given none applies `DEFAULT_SANDBOX_LIMITS`. */
  limits?: SandboxLimits;
  /**
   * With `fork` (a fork child): its `/work` and its conversation start from the fork point `base`
   * made by `snapshot`, not from the parent's sandbox as it is now.
   */
  fork?: ForkSource;
}

/**
 * Where a fork child starts: a fork point (`SandboxRuntime.snapshot`), and which of its copies
 * this one is. Its conversation is the fork point's, copied as a branch, cut at `toolCallId`
 * when the fork was made from inside a turn (that call's result is then "forked: you are copy
 * `copy` of `of`").
 */
export interface ForkSource {
  baseId: string;
  /** 1-based. */
  copy: number;
  of: number;
  toolCallId?: string;
}

/** The daemon's defaults (`SWARM_LIMIT_*`), also what a runtime applies when a request names none. */
export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  pids: 512,
  memoryMiB: 2048,
  cpus: 1,
  diskMiB: 4096,
  tmpMiB: 256,
};

/**
 * A sandbox runtime: the service's handle on agent sandboxes, acting from outside the agent.
 *
 * Layout: every sandbox has a host folder `<dataDir>/sandboxes/<sandboxId>/` whose `control/`
 * subfolder holds the harness socket (`harness.sock`), its event log and the spec. The agent sees
 * its files at `/work` and its inputs at `/inputs`.
 *
 * Every call takes an AbortSignal; an aborted call rejects with the signal's reason and leaves no
 * half-made sandbox behind (what it created is removed). Errors are `SwarmError`s (src/errors.ts).
 */
export interface SandboxRuntime {
  readonly kind: RuntimeKind;
  /**
   * Whether an agent's tools run where they cannot reach their harness or its control folder
   * (another user, or no file system of the host's at all): what a harness enforces for the daemon
   * (approval gates on its tools) holds only then.
   */
  readonly harnessOutOfReach: boolean;
  /** Why this runtime gives no sandbox a network, when it does not: a spec with `network: true` is then a 400 saying so. */
  readonly networkRefusal?: string;

  /**
   * Create an empty sandbox (empty `/work`, empty `/inputs`). Does not start the harness, unless it
   * hands out one whose harness was started ahead (the process runtime's pool, docs/pool.md):
   * `startHarness` then resolves at once.
   * Throws `SANDBOX_EXISTS` when `sandboxId` is already owned, `SANDBOX_PROVISION_FAILED` otherwise.
   */
  provision(req: ProvisionRequest, signal: AbortSignal): Promise<SandboxInfo>;

  /**
   * Create a new sandbox whose `/work` is a copy of the live parent's files at this moment.
   * Never copies processes. The parent keeps running (it may be frozen for the copy's duration on
   * runtimes that need it, and is left in the state it was in).
   * Throws `SANDBOX_NOT_FOUND` / `SANDBOX_GONE` for the parent, `SANDBOX_PROVISION_FAILED` otherwise.
   */
  fork(parentSandboxId: string, req: ProvisionRequest, signal: AbortSignal): Promise<SandboxInfo>;

  /**
   * Make a fork point `baseId` of a live (or hibernated) sandbox: a frozen copy of its `/work` and of
   * its conversation (pi's session) at this moment, the sandbox frozen for the copy and left as it
   * was. Children forked from it share it as far as the runtime can (never seeing one another's or
   * the sandbox's later writes); it is kept with the run until `dropRun`. `copies` says how many
   * children will be forked from it, for a runtime that prepares their `/work` ahead (a hint: a
   * child of a fork point is made all the same without it). Idempotent for one id. Throws
   * `SANDBOX_NOT_FOUND`, `SANDBOX_GONE`, `SNAPSHOT_FAILED` (a session over `MAX_SESSION_BYTES`
   * among the reasons).
   */
  snapshot(sandboxId: string, baseId: string, runId: string, signal: AbortSignal, copies?: number): Promise<void>;

  /**
   * A read-only view of a fork point or of a sandbox's `/work`. A fork child's `/work` stays
   * readable after its sandbox closed, until `dropRun`. Throws `SANDBOX_NOT_FOUND` when there is
   * no such tree.
   */
  openTree(ref: TreeRef, signal: AbortSignal): Promise<WorkTree>;

  /**
   * Apply `changes` to a live sandbox's `/work` in order, as its agent's user, never through a
   * link, the sandbox frozen meanwhile and left as it was. Refuses (`DISK_LIMIT`) changes that
   * would take `/work` over its disk limit, before writing anything. Throws `SANDBOX_NOT_FOUND`,
   * `SANDBOX_GONE`.
   */
  applyChanges(sandboxId: string, changes: WorkChange[], signal: AbortSignal): Promise<void>;

  /** Remove what forks of the run kept (fork points, the `/work` of ended fork children). Idempotent. */
  dropRun(runId: string, signal: AbortSignal): Promise<void>;

  /**
   * Write files into `/inputs` (name → UTF-8 content; names are plain file names, no slashes).
   * Overwrites files of the same name. Throws `SANDBOX_NOT_FOUND`, `INVALID_INPUT_NAME`.
   */
  writeInputs(sandboxId: string, files: Record<string, string>, signal: AbortSignal): Promise<void>;

  /**
   * Start the harness inside the sandbox and resolve once its socket accepts connections.
   * Idempotent: when the harness already runs, resolves at once. Throws `SANDBOX_NOT_FOUND`,
   * `SANDBOX_GONE`, `HARNESS_START_FAILED` (with the harness's own output in the message).
   */
  startHarness(sandboxId: string, signal: AbortSignal): Promise<void>;

  /**
   * End the harness of an idle sandbox to free its memory, keeping everything it needs to go on:
   * the sandbox's files, its control folder (event log, pi's session file) and its limits. The
   * status becomes `hibernated`; `startHarness` brings it back (the same session, the event log's
   * `hseq` going on from where it stopped). Meanwhile `connect` throws `HARNESS_UNREACHABLE`,
   * `freeze` and `thaw` do nothing, `fork` copies its files, and `close` removes it. The caller
   * hibernates only a harness with no turn running. Idempotent; a sandbox whose harness never
   * started is left as it is. Throws `SANDBOX_NOT_FOUND`, `SANDBOX_GONE`, and `SANDBOX_FROZEN` for
   * a frozen sandbox (a paused agent is not hibernated).
   *
   * Calls on one sandbox take effect in the order they were made (the daemon relies on it: a
   * wake's `startHarness` asked before a `freeze` is frozen by it).
   */
  hibernate(sandboxId: string, signal: AbortSignal): Promise<void>;

  /**
   * Open a new connection to the harness socket (a Unix socket, or for the simulated runtime a
   * stream made in this process). The harness serves one client at a time; a new connection
   * replaces the previous one. Throws `HARNESS_UNREACHABLE`.
   */
  connect(sandboxId: string, signal: AbortSignal): Promise<Duplex>;

  /**
   * Suspend every process of the sandbox in place. Idempotent (freezing a frozen sandbox is fine).
   * Throws `SANDBOX_NOT_FOUND`, `SANDBOX_GONE`, `SANDBOX_FREEZE_FAILED`.
   */
  freeze(sandboxId: string, signal: AbortSignal): Promise<void>;

  /**
   * Continue every process of the sandbox from where it was frozen. Idempotent.
   * Throws `SANDBOX_NOT_FOUND`, `SANDBOX_GONE`, `SANDBOX_THAW_FAILED`.
   */
  thaw(sandboxId: string, signal: AbortSignal): Promise<void>;

  /**
   * Kill every process of the sandbox and release its folder, container and images.
   * Idempotent: closing an unknown or already closed sandbox resolves. A frozen sandbox is closed too.
   */
  close(sandboxId: string, signal: AbortSignal): Promise<void>;

  /** Status of one owned sandbox, or `undefined` when this data folder does not own it. */
  inspect(sandboxId: string, signal: AbortSignal): Promise<SandboxInfo | undefined>;

  /**
   * Every sandbox this data folder owns, including ones whose processes vanished (`gone`).
   * A restarted service uses it to reconnect to live sandboxes and close orphans.
   */
  list(signal: AbortSignal): Promise<SandboxInfo[]>;

  /**
   * Runtimes with nodes of their own (cluster): whether swarmd can reach the engine of the
   * sandbox's node now (`undefined`: it knows no such sandbox).
   */
  reachable?(sandboxId: string): boolean | undefined;

  /**
   * Resolves when the sandbox's node can be reached (at once when it can); rejects with the reason
   * when the sandbox was lost first (its node declared down or drained).
   */
  whenReachable?(sandboxId: string, signal: AbortSignal): Promise<void>;

  /**
   * Close what the runtime made ahead of any agent (the process runtime's pool of sandboxes); the
   * sandboxes agents have are left running. Optional: runtimes that make nothing ahead have none.
   */
  dispose?(): Promise<void>;

  /** Host path of the sandbox's control folder (socket, event log, spec). */
  controlDir(sandboxId: string): string;

  /**
   * The machines this runtime's sandboxes run on, with this data folder's live sandboxes and the
   * limits they reserve on each. The single-host runtimes answer one node, `local` (the daemon's
   * machine). Never throws for a node it cannot reach: such a node is answered `unreachable`.
   */
  nodes(signal: AbortSignal): Promise<NodeInfo[]>;

  /**
   * Tell `listener` of every change to a sandbox that the daemon did not ask for (its node's engine
   * lost or found again, the sandbox lost with its node), until the returned function is called.
   * Optional: runtimes on one host have no node to lose and do not implement it. `listener` must
   * not throw.
   */
  watch?(listener: (change: SandboxChange) => void): () => void;
}
