import { type AnyEventObject, fromCallback } from "xstate";
import type { HarnessActorInput, HarnessCommandEvent, HarnessReportEvent } from "../../machines/agent.types.ts";
import { errorMessage } from "../../src/errors.ts";
import { attachHarnessClient, type HarnessClient, HarnessRejected } from "../../src/harness/client.ts";
import {
  type HarnessEventMessage,
  type HostCallMessage,
  hostCallTool,
  isHarnessRecordedEvent,
  isPersistedHarnessEvent,
  type TurnSettledData,
} from "../../src/harness/protocol.ts";
import { createLimitedLog } from "../../src/harness/rate-gate.ts";
import { capEventData } from "../../src/harness/wire-schemas.ts";
import type { ToolRefusal } from "../../src/ledger/run-events.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { Admit } from "../start-queue.ts";
import {
  createHostCallQueue,
  HOST_CALLS_ANSWERED,
  HOST_CALLS_WAITING,
  HOST_CALLS_WAITING_BYTES,
} from "./host-call-queue.ts";

/** What the harness actor needs from the rest of the service. */
export interface HarnessActorDeps {
  runtime: SandboxRuntime;
  /** The last harness event this agent had recorded (persisted event or settled turn). */
  recordedHseq(agentId: string): Promise<number>;
  /** Prompts this agent's harness acknowledged over the agent's life, as the ledger recorded them. */
  recordedPrompts(agentId: string): Promise<number>;
  /**
   * Record that the harness has taken `count` prompts in all, the newest logged at `hseq`: in one
   * batch, so a restart's count of turns owed is exact as of the harness event it resumes after.
   */
  recordPrompts(agentId: string, count: number, hseq: number): Promise<unknown>;
  /** Persist one harness event of the §6.2 list, recording its hseq in the same batch. */
  persist(agentId: string, event: HarnessEventMessage): Promise<unknown>;
  /** Hand an ephemeral event to live listeners. */
  publish(agentId: string, event: HarnessEventMessage): void;
  /**
   * Answer a host call of the agent (`spawn_agent`, `await_result`, `permission`). `signal` aborts
   * when the connection it came on closes: the harness sends the call again on its next one.
   */
  hostCall(agentId: string, call: HostCallMessage, signal: AbortSignal): Promise<unknown>;
  /** Record a host call refused here (the queue was full) as the agent's `tool_refused`; must not throw. */
  refused(agentId: string, refusal: ToolRefusal): void;
  log(message: string): void;
  /** Start a hibernated harness once the start line admits it. */
  admit: Admit;
  /** Idle time between turns after which `harness.idleElapsed` is reported (SWARM_HIBERNATE_AFTER_MS); 0: never. */
  hibernateAfterMs: number;
  /** Told of each attempt to open a dropped (or never opened) connection again (metrics); must not throw. */
  onReconnect?: () => void;
}

/** The harness effect: the actor logic the agent machine invokes, and what the run asks of a live harness. */
export interface HarnessEffect {
  logic: ReturnType<typeof harnessLogic>;
  /** The session stats of the agent's harness when it is connected and answers within `timeoutMs`. */
  sessionStats(agentId: string, timeoutMs: number): Promise<Record<string, unknown> | undefined>;
}

const RECONNECT_ATTEMPTS = 5;
/** How long a hibernation waits for the harness's state and last session stats. */
const STATS_TIMEOUT_MS = 2_000;

export function createHarnessEffect(deps: HarnessActorDeps): HarnessEffect {
  /** Each live agent's open connection: the actor's, read for `sessionStats`. */
  const connections = new Map<string, HarnessClient>();
  return {
    logic: harnessLogic(deps, connections),
    async sessionStats(agentId, timeoutMs) {
      const client = connections.get(agentId);
      const stats = await client?.request({ type: "get_session_stats" }, timeoutMs).catch(() => undefined);
      return stats && typeof stats === "object" && !Array.isArray(stats)
        ? (stats as Record<string, unknown>)
        : undefined;
    },
  };
}

/**
 * The agent's connection to its harness for as long as the agent is live. Forwards harness events
 * to the ledger (persisted) or live listeners (ephemeral), reports activity and settled turns to
 * the machine, and carries the machine's commands: prompt, steer, abort, and the steps of a
 * hibernation and a wake (the machine decides when; this actor does them and reports how they
 * ended). A connection that drops is re-opened from the last event seen, unless the harness was
 * ended on purpose; a sandbox that is gone is reported as `harness.lost`.
 */
// Abort reasons made once: `abort()` without one makes a DOMException, stack trace included, per
// call, and a subtree stop of 10,000 agents spent 8 % of its time making them. Named as that one
// is, so whatever passes aborts through by name still does.
const abortReason = (message: string) => Object.assign(new Error(message), { name: "AbortError" });
const LEFT_LIVE = abortReason("the agent left its live state");
const CONNECTION_CLOSED = abortReason("the harness connection closed");

function harnessLogic(deps: HarnessActorDeps, connections: Map<string, HarnessClient>) {
  return fromCallback<HarnessCommandEvent, HarnessActorInput>(({ input, sendBack, receive }) => {
    const { agentId, sandboxId } = input;
    const log = (message: string) => {
      try {
        deps.log(`agent ${agentId}: ${message}`);
      } catch {
        // logging must not throw into a harness handler
      }
    };
    const refusals = createLimitedLog(log);
    // Reports reach the machine synchronously; a throw there must not travel back into socket
    // handlers (where it would take the daemon down), so it is logged instead.
    const report = (event: HarnessReportEvent) => {
      try {
        sendBack(event as AnyEventObject);
      } catch (err) {
        log(`reporting ${event.type} failed: ${errorMessage(err)}`);
      }
    };
    const abort = new AbortController();
    let client: HarnessClient | undefined;
    // Newest hseq handled on any connection of this actor, and the prompts the harness took over the
    // agent's life, as recorded in the ledger: given by the machine when it knows them, else read
    // at the first connect (-1).
    let seen = input.recorded?.hseq ?? -1;
    let prompts = input.recorded?.prompts ?? -1;
    let accepted = 0; // `prompt_accepted` events handled by this actor, replayed ones included
    // Host calls: 8 answered at once, 64 waiting in order; held while the agent is paused.
    const calls = createHostCallQueue();
    let ready: Promise<HarnessClient>;
    /** The harness was ended on purpose (hibernated): nothing reconnects until a wake. */
    let detached = input.asleep;
    /** The hibernation or wake under way, which a later command may give up. */
    let hibernation: { cancelled: boolean } | undefined;
    let waking: { cancel: AbortController; started: boolean } | undefined;
    let idleTimer: NodeJS.Timeout | undefined;
    // Commands observe a failed connection through their own catch; this one only keeps the
    // rejection from counting as unhandled.
    const setReady = (next: Promise<HarnessClient>) => {
      ready = next;
      next.catch(() => undefined);
    };
    setReady(detached ? Promise.reject(new Error("the harness hibernates")) : connect().catch(() => reconnect()));

    async function connect(): Promise<HarnessClient> {
      if (seen < 0) seen = await deps.recordedHseq(agentId);
      if (prompts < 0) prompts = await deps.recordedPrompts(agentId);
      const socket = await deps.runtime.connect(sandboxId, abort.signal);
      // Host calls still open when this connection closes are given up: those being answered are
      // aborted (their slots free up as they end), those waiting are dropped, and the harness sends
      // every one again on its next connection.
      const connection = new AbortController();
      const callsEnd = AbortSignal.any([abort.signal, connection.signal]);
      const next = attachHarnessClient(socket, seen, {
        onEvent: (event) => {
          if (event.hseq <= seen) return;
          seen = event.hseq;
          handle(event);
        },
        onHostCall: (call, size) => answer(next, call, size, callsEnd),
        log,
        onClose: () => {
          connection.abort(CONNECTION_CLOSED);
          calls.drop();
          if (connections.get(agentId) === next) connections.delete(agentId);
          if (!abort.signal.aborted && !detached) setReady(reconnect());
        },
      });
      client = next;
      connections.set(agentId, next);
      return next;
    }

    async function reconnect(): Promise<HarnessClient> {
      for (let attempt = 0; ; attempt++) {
        if (abort.signal.aborted) throw new Error("the agent left its live state");
        // A node swarmd cannot reach is waited for, however long: the swarm decides when it is down
        // (then the sandbox is gone, and the inspect below says so).
        if (await waitedForNode()) attempt = 0;
        const info = await deps.runtime.inspect(sandboxId, abort.signal).catch(() => undefined);
        if (info?.status === "hibernated") {
          // Hibernated before the daemon restarted (and the ledger may not know yet).
          detached = true;
          report({ type: "harness.slept", sessionStats: null });
          throw new Error("the harness hibernates");
        }
        if (!info || info.status === "gone" || attempt >= RECONNECT_ATTEMPTS) {
          const why =
            !info || info.status === "gone" ? (info?.reason ?? "its sandbox is gone") : "its harness stopped answering";
          if (!abort.signal.aborted) report({ type: "harness.lost", error: `agent lost: ${why}` });
          throw new Error(why);
        }
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
        deps.onReconnect?.();
        try {
          return await connect();
        } catch {}
      }
    }

    /** Whether the sandbox's node was unreachable (and answered again, or was lost) before this. */
    async function waitedForNode(): Promise<boolean> {
      if (!deps.runtime.whenReachable || deps.runtime.reachable?.(sandboxId) !== false) return false;
      await deps.runtime.whenReachable(sandboxId, abort.signal).catch(() => undefined);
      return true;
    }

    /** Events come validated by the client (`turn_settled` data included); this never throws. */
    function handle(event: HarnessEventMessage) {
      if (event.event === "turn_settled") {
        const data = event.data as unknown as TurnSettledData;
        report({
          type: "harness.settled",
          outcome: data.outcome,
          text: data.text,
          error: data.error,
          hseq: event.hseq,
        });
        return;
      }
      report({ type: "harness.activity" });
      if (event.event === "prompt_accepted") {
        // The harness owes a turn for it. Recovery reads this count from the ledger, never from the
        // control folder the agent can write.
        accepted++;
        prompts = Math.max(0, prompts) + 1;
        deps
          .recordPrompts(agentId, prompts, event.hseq)
          .catch((err: unknown) => log(`could not record a prompt taken: ${errorMessage(err)}`));
        return;
      }
      const capped = { ...event, data: capEventData(event.data) };
      try {
        if (isPersistedHarnessEvent(event.event)) {
          // Approval events are the daemon's record, never a harness's word.
          if (!isHarnessRecordedEvent(event.event))
            return refusals(`dropped a ${event.event} event: approvals are recorded by the daemon`);
          deps
            .persist(agentId, capped)
            .catch((err: unknown) => log(`could not persist ${event.event}: ${errorMessage(err)}`));
        } else {
          deps.publish(agentId, capped);
        }
      } catch (err) {
        log(`could not record ${event.event}: ${errorMessage(err)}`);
      }
    }

    /** Answer a host call now or once its turn in the queue comes; past the queue, refuse it at once. */
    function answer(to: HarnessClient, call: HostCallMessage, size: number, signal: AbortSignal) {
      const taken = calls.offer(size, () =>
        Promise.resolve()
          .then(() => {
            signal.throwIfAborted();
            return deps.hostCall(agentId, call, signal);
          })
          .then(
            (data) => to.answer(call.id, { ok: true, data }),
            (err: unknown) => to.answer(call.id, { ok: false, error: errorMessage(err) }),
          )
          .catch((err: unknown) => log(`answering host call failed: ${errorMessage(err)}`)),
      );
      if (taken) return;
      const { answering, waiting } = calls.counts;
      refusals(`refused a ${call.method} host call: ${answering} being answered and ${waiting} waiting`);
      const message = `too many host calls: ${answering} are being answered and ${waiting} wait, as many as may (${HOST_CALLS_ANSWERED} answered at once, at most ${HOST_CALLS_WAITING} calls or ${HOST_CALLS_WAITING_BYTES / 1024 / 1024} MiB waiting); retry when one has answered`;
      deps.refused(agentId, { tool: hostCallTool(call), code: "HOST_CALLS_FULL", message });
      to.answer(call.id, { ok: false, error: message });
    }

    /**
     * End the idle harness, keeping its session and files (`SandboxRuntime.hibernate`): reported
     * `harness.slept`. Declined (`harness.awake`) when the harness is busy or unreachable, when a
     * command gave it up before the harness was ended, or when the runtime could not do it.
     */
    async function hibernate(attempt: { cancelled: boolean }): Promise<void> {
      const declined = () => report({ type: "harness.awake" });
      const c = await ready.catch(() => undefined);
      if (!c || attempt.cancelled || abort.signal.aborted) return declined();
      // The harness's own word that nothing runs or waits (a harness that lies only loses its process).
      const state = (await c.request({ type: "get_state" }, STATS_TIMEOUT_MS).catch(() => undefined)) as
        | { busy?: unknown; queued?: unknown; loaded?: unknown }
        | undefined;
      if (state?.busy !== false || state.queued !== 0) return declined();
      // A harness that never loaded pi has no session to report: asking would load it.
      const stats =
        state.loaded === false
          ? null
          : await c.request({ type: "get_session_stats" }, STATS_TIMEOUT_MS).catch(() => null);
      if (attempt.cancelled || abort.signal.aborted) return declined();
      detached = true;
      c.close();
      try {
        await deps.runtime.hibernate(sandboxId, abort.signal);
      } catch (err) {
        if (abort.signal.aborted) return;
        log(`could not hibernate: ${errorMessage(err)}`);
        detached = false;
        setReady(connect().catch(() => reconnect()));
        return declined();
      }
      // The harness's stats go into the ledger: capped like its events' data.
      const kept =
        stats && typeof stats === "object" && !Array.isArray(stats)
          ? capEventData(stats as Record<string, unknown>)
          : null;
      report({ type: "harness.slept", sessionStats: kept });
    }

    /**
     * Start the hibernated harness again through the start line, then connect: `harness.woke`.
     * Given up while it still waits for its start (`harness.stayAsleep`): `harness.slept`. A start
     * that fails loses the agent.
     */
    async function wake(attempt: { cancel: AbortController; started: boolean }): Promise<void> {
      const signal = AbortSignal.any([abort.signal, attempt.cancel.signal]);
      try {
        await deps.admit(agentId, signal, async () => {
          signal.throwIfAborted();
          attempt.started = true;
          await deps.runtime.startHarness(sandboxId, abort.signal);
        });
      } catch (err) {
        if (abort.signal.aborted) return;
        if (attempt.cancel.signal.aborted && !attempt.started) {
          report({ type: "harness.slept", sessionStats: null });
          return;
        }
        report({
          type: "harness.lost",
          error: `agent lost: its hibernated harness did not start again: ${errorMessage(err)}`,
        });
        return;
      }
      detached = false;
      setReady(connect().catch(() => reconnect()));
      report({ type: "harness.woke" });
    }

    receive((command) => {
      // Waiting host calls stand still while the agent is paused; the idle timer is not theirs.
      if (command.type === "harness.hold") return calls.hold();
      if (command.type === "harness.release") return calls.release();
      clearTimeout(idleTimer);
      switch (command.type) {
        case "harness.idle":
          if (deps.hibernateAfterMs > 0)
            idleTimer = setTimeout(() => report({ type: "harness.idleElapsed" }), deps.hibernateAfterMs).unref();
          return;
        case "harness.hibernate":
          hibernation = { cancelled: false };
          void hibernate(hibernation).catch((err: unknown) => log(`hibernation failed: ${errorMessage(err)}`));
          return;
        case "harness.stayAwake":
          if (hibernation) hibernation.cancelled = true;
          return;
        case "harness.wake":
          waking = { cancel: new AbortController(), started: false };
          void wake(waking).catch((err: unknown) => log(`wake failed: ${errorMessage(err)}`));
          return;
        case "harness.stayAsleep":
          if (waking && !waking.started) waking.cancel.abort(new Error("given up for a pause"));
          return;
      }
      void ready
        .then((c) => run(c, command))
        .catch((err: unknown) => {
          if (command.type === "harness.steer")
            report({
              type: "harness.steered",
              requestId: command.requestId,
              message: command.message,
              ok: false,
              error: errorMessage(err),
            });
          else deps.log(`harness command ${command.type} for ${agentId} failed: ${errorMessage(err)}`);
        });
    });

    async function run(
      c: HarnessClient,
      command: Extract<
        HarnessCommandEvent,
        { type: "harness.prompt" | "harness.steer" | "harness.abort" | "harness.resend" }
      >,
    ): Promise<void> {
      switch (command.type) {
        case "harness.prompt":
          await c.request({ type: "prompt", message: command.text });
          return;
        case "harness.resend":
          // The connection's replay of the harness's log (from before any recorded event) is handled
          // once a `get_state` is answered, and so is a prompt the harness was still taking: only then
          // does `accepted` say whether the harness has the spawn prompt.
          await c.request({ type: "get_state" });
          if (accepted === 0) await c.request({ type: "prompt", message: command.text });
          return;
        case "harness.abort":
          await c.request({ type: "abort" });
          return;
        case "harness.steer":
          try {
            await c.request({ type: "steer", message: command.message });
            report({ type: "harness.steered", requestId: command.requestId, message: command.message, ok: true });
          } catch (err) {
            const idle = err instanceof HarnessRejected && err.harnessCode === "NO_TURN_RUNNING";
            report({
              type: "harness.steered",
              requestId: command.requestId,
              message: command.message,
              ok: false,
              idle,
              error: errorMessage(err),
            });
          }
          return;
      }
    }

    return () => {
      clearTimeout(idleTimer);
      abort.abort(LEFT_LIVE);
      calls.drop();
      if (client && connections.get(agentId) === client) connections.delete(agentId);
      client?.close();
    };
  });
}
