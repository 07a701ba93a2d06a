import { type AnyEventObject, fromCallback } from "xstate";
import type { HarnessActorInput, HarnessCommandEvent, HarnessReportEvent } from "../../machines/agent.types.ts";
import { errorMessage } from "../../src/errors.ts";
import { attachHarnessClient, type HarnessClient, HarnessRejected } from "../../src/harness/client.ts";
import {
  type HarnessEventMessage,
  type HostCallMessage,
  isHarnessRecordedEvent,
  isPersistedHarnessEvent,
  type TurnSettledData,
} from "../../src/harness/protocol.ts";
import { createLimitedLog } from "../../src/harness/rate-gate.ts";
import { capEventData } from "../../src/harness/wire-schemas.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { Admit } from "../start-queue.ts";
import type { HarnessHolds } from "./harness-holds.ts";

/** What the harness actor needs from the rest of the service. */
export interface HarnessActorDeps {
  runtime: SandboxRuntime;
  /** Live connections by agent, for `sessionStats`. */
  clients: Map<string, HarnessClient>;
  /** The last harness event this agent had recorded (persisted event or settled turn). */
  recordedHseq(agentId: string): Promise<number>;
  /** Prompts this agent's harness acknowledged over the agent's life, as the ledger recorded them. */
  recordedPrompts(agentId: string): Promise<number>;
  /** Record that the harness has acknowledged `count` prompts in all (recovery's count of turns owed). */
  recordPrompts(agentId: string, count: number): Promise<unknown>;
  /** Persist one harness event of the §6.2 list, recording its hseq in the same batch. */
  persist(agentId: string, event: HarnessEventMessage): Promise<unknown>;
  /** Hand an ephemeral event to live listeners. */
  publish(agentId: string, event: HarnessEventMessage): void;
  /**
   * Answer a host call of the agent (`spawn_agent`, `await_result`, `permission`). `signal` aborts
   * when the connection it came on closes: the harness sends the call again on its next one.
   */
  hostCall(agentId: string, call: HostCallMessage, signal: AbortSignal): Promise<unknown>;
  log(message: string): void;
  /** Start a hibernated harness once the start line admits it. */
  admit: Admit;
  /** Agents paused or pausing: their hibernated harness is not woken until released. */
  holds: HarnessHolds;
  /** Idle time between turns after which the harness hibernates (SWARM_HIBERNATE_AFTER_MS); 0: never. */
  hibernateAfterMs: number;
  /** Record that the agent hibernated (`agent_hibernated`), with its session's last stats. */
  recordSleep(agentId: string, sessionStats: Record<string, unknown> | null): Promise<unknown>;
  /** Record that the agent's harness runs again (`agent_woke`). */
  recordWake(agentId: string): Promise<unknown>;
  /** Told of each attempt to open a dropped (or never opened) connection again (metrics); must not throw. */
  onReconnect?: () => void;
}

const RECONNECT_ATTEMPTS = 5;
/** How long a hibernation waits for the harness's last session stats. */
const STATS_TIMEOUT_MS = 2_000;

/** Host calls of one agent answered at once; more are refused with a tool error until some finish. */
export const MAX_PENDING_HOST_CALLS = 8;

/**
 * The agent's connection to its harness for as long as the agent is live. Forwards harness events
 * to the ledger (persisted) or live listeners (ephemeral), reports activity and settled turns to
 * the machine, and carries the machine's prompt / steer / abort commands. A connection that drops
 * is re-opened from the last event seen; a sandbox that is gone is reported as `harness.lost`.
 */
export function createHarnessActor(deps: HarnessActorDeps) {
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
    let seen = -1; // newest hseq handled on any connection of this actor
    let prompts = -1; // prompts the harness acknowledged, as recorded in the ledger
    let pendingHostCalls = 0;
    let ready: Promise<HarnessClient>;
    /** The harness was ended by a hibernation: nothing reconnects until a command wakes it. */
    let asleep = false;
    /** Hibernations and wakes, one after the other; never rejects. */
    let phase: Promise<void> = Promise.resolve();
    /** Commands received so far: a hibernation asked for before the newest command is dropped. */
    let commands = 0;
    /** Hibernates the harness once the agent stayed idle long enough (`harness.idle`). */
    let idleTimer: NodeJS.Timeout | undefined;
    // Commands observe a failed connection through their own catch; this one only keeps the
    // rejection from counting as unhandled.
    const setReady = (next: Promise<HarnessClient>) => {
      ready = next;
      next.catch(() => undefined);
    };
    setReady(connect().catch(() => reconnect()));

    async function connect(): Promise<HarnessClient> {
      if (seen < 0) seen = await deps.recordedHseq(agentId);
      if (prompts < 0) prompts = await deps.recordedPrompts(agentId);
      const socket = await deps.runtime.connect(sandboxId, abort.signal);
      // Host calls still waiting when this connection closes are given up: their slots free up, and
      // the harness sends them again on its next connection.
      const connection = new AbortController();
      const callsEnd = AbortSignal.any([abort.signal, connection.signal]);
      const next = attachHarnessClient(socket, seen, {
        onEvent: (event) => {
          if (event.hseq <= seen) return;
          seen = event.hseq;
          handle(event);
        },
        onHostCall: (call) => answer(next, call, callsEnd),
        log,
        onClose: () => {
          connection.abort();
          if (deps.clients.get(agentId) === next) deps.clients.delete(agentId);
          if (!abort.signal.aborted && !asleep) setReady(reconnect());
        },
      });
      client = next;
      deps.clients.set(agentId, next);
      return next;
    }

    async function reconnect(): Promise<HarnessClient> {
      for (let attempt = 0; ; attempt++) {
        if (abort.signal.aborted) throw new Error("the agent left its live state");
        const info = await deps.runtime.inspect(sandboxId, abort.signal).catch(() => undefined);
        if (info?.status === "hibernated") {
          // Hibernated before the daemon restarted: the next command wakes it.
          asleep = true;
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
      if (event.event === "prompt_accepted") return; // the ledger keeps the count (recordPrompts)
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

    function answer(to: HarnessClient, call: HostCallMessage, signal: AbortSignal) {
      if (pendingHostCalls >= MAX_PENDING_HOST_CALLS) {
        refusals(`refused a ${call.method} host call: ${MAX_PENDING_HOST_CALLS} already pending`);
        to.answer(call.id, {
          ok: false,
          error: `too many host calls in flight (at most ${MAX_PENDING_HOST_CALLS}); retry when one has answered`,
        });
        return;
      }
      pendingHostCalls++;
      Promise.resolve()
        .then(() => deps.hostCall(agentId, call, signal))
        .then(
          (data) => to.answer(call.id, { ok: true, data }),
          (err: unknown) => to.answer(call.id, { ok: false, error: errorMessage(err) }),
        )
        .catch((err: unknown) => log(`answering host call failed: ${errorMessage(err)}`))
        .finally(() => pendingHostCalls--);
    }

    /**
     * End the idle harness, keeping its session and files (`SandboxRuntime.hibernate`). Dropped
     * when a command came after it was asked, or the harness is busy or unreachable. A failed
     * hibernation is logged and the agent goes on awake.
     */
    function hibernate(askedAt: number): void {
      phase = phase.then(async () => {
        // A paused agent's sandbox is frozen: it is not hibernated (its resume makes it idle again).
        if (asleep || askedAt !== commands || abort.signal.aborted || deps.holds.isHeld(agentId)) return;
        const c = await ready.catch(() => undefined);
        if (!c || askedAt !== commands) return;
        // The harness's own word that nothing runs or waits (a harness that lies only loses its process).
        const state = (await c.request({ type: "get_state" }, STATS_TIMEOUT_MS).catch(() => undefined)) as
          | { busy?: unknown; queued?: unknown; loaded?: unknown }
          | undefined;
        if (state?.busy !== false || state.queued !== 0) return;
        // A harness that never loaded pi has no session to report: asking would load it.
        const stats =
          state.loaded === false
            ? null
            : await c.request({ type: "get_session_stats" }, STATS_TIMEOUT_MS).catch(() => null);
        if (askedAt !== commands || abort.signal.aborted) return;
        asleep = true;
        c.close();
        try {
          await deps.runtime.hibernate(sandboxId, abort.signal);
        } catch (err) {
          if (abort.signal.aborted) return;
          log(`could not hibernate: ${errorMessage(err)}`);
          asleep = false;
          setReady(connect().catch(() => reconnect()));
          return;
        }
        // The harness's stats go into the ledger: capped like its events' data.
        const kept =
          stats && typeof stats === "object" && !Array.isArray(stats)
            ? capEventData(stats as Record<string, unknown>)
            : null;
        await deps
          .recordSleep(agentId, kept)
          .catch((err: unknown) => log(`could not record its hibernation: ${errorMessage(err)}`));
      });
    }

    /** Start a hibernated harness again (not while its agent is paused), then connect as usual. */
    async function wake(): Promise<void> {
      for (;;) {
        await deps.holds.whenReleased(agentId, abort.signal);
        // The hold is checked in the same tick as the start is asked: see HarnessHolds.
        const started = await deps.admit(agentId, abort.signal, async () => {
          if (deps.holds.isHeld(agentId)) return false;
          await deps.runtime.startHarness(sandboxId, abort.signal);
          return true;
        });
        if (started) break;
      }
      asleep = false;
      await deps.recordWake(agentId).catch((err: unknown) => log(`could not record its wake: ${errorMessage(err)}`));
      setReady(connect().catch(() => reconnect()));
    }

    /** The connection for a command, waking a hibernated harness first; a wake that fails loses the agent. */
    function awake(): Promise<HarnessClient> {
      commands++;
      phase = phase.then(async () => {
        // A connection under way may find the harness hibernated (a daemon restarted meanwhile).
        await ready.catch(() => undefined);
        if (!asleep || abort.signal.aborted) return;
        try {
          await wake();
        } catch (err) {
          if (abort.signal.aborted) return;
          const why = `its hibernated harness did not start again: ${errorMessage(err)}`;
          setReady(Promise.reject(new Error(why)));
          report({ type: "harness.lost", error: `agent lost: ${why}` });
        }
      });
      return phase.then(() => ready);
    }

    receive((command) => {
      clearTimeout(idleTimer);
      if (command.type === "harness.idle") {
        const askedAt = commands;
        if (deps.hibernateAfterMs > 0) idleTimer = setTimeout(() => hibernate(askedAt), deps.hibernateAfterMs).unref();
        return;
      }
      // Nothing runs in a hibernated harness: there is nothing to abort.
      if (command.type === "harness.abort" && asleep) return;
      void awake()
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
      command: Exclude<HarnessCommandEvent, { type: "harness.idle" }>,
    ): Promise<void> {
      switch (command.type) {
        case "harness.prompt":
          await c.request({ type: "prompt", message: command.text });
          // Acknowledged: the harness owes a turn for it. Recovery reads this count from the
          // ledger, never from the control folder the agent can write.
          prompts = Math.max(0, prompts) + 1;
          await deps.recordPrompts(agentId, prompts);
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
      abort.abort();
      if (client && deps.clients.get(agentId) === client) deps.clients.delete(agentId);
      client?.close();
    };
  });
}
