import { fromCallback, type AnyEventObject } from "xstate";
import type { HarnessActorInput, HarnessCommandEvent, HarnessReportEvent } from "../../machines/agent.types.ts";
import { errorMessage } from "../../src/errors.ts";
import { attachHarnessClient, HarnessRejected, type HarnessClient } from "../../src/harness/client.ts";
import { isPersistedHarnessEvent, type HarnessEventMessage, type HostCallMessage, type TurnSettledData } from "../../src/harness/protocol.ts";
import { createLimitedLog } from "../../src/harness/rate-gate.ts";
import { capEventData } from "../../src/harness/wire-schemas.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";

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
  /** Answer a `spawn_agent` / `await_result` call made by the agent. */
  hostCall(agentId: string, call: HostCallMessage): Promise<unknown>;
  log(message: string): void;
}

const RECONNECT_ATTEMPTS = 5;

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
      const next = attachHarnessClient(socket, seen, {
        onEvent: (event) => {
          if (event.hseq <= seen) return;
          seen = event.hseq;
          handle(event);
        },
        onHostCall: (call) => answer(next, call),
        log,
        onClose: () => {
          if (deps.clients.get(agentId) === next) deps.clients.delete(agentId);
          if (!abort.signal.aborted) setReady(reconnect());
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
        if (!info || info.status === "gone" || attempt >= RECONNECT_ATTEMPTS) {
          const why = !info || info.status === "gone" ? (info?.reason ?? "its sandbox is gone") : "its harness stopped answering";
          if (!abort.signal.aborted) report({ type: "harness.lost", error: `agent lost: ${why}` });
          throw new Error(why);
        }
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
        try {
          return await connect();
        } catch {
          continue;
        }
      }
    }

    /** Events come validated by the client (`turn_settled` data included); this never throws. */
    function handle(event: HarnessEventMessage) {
      if (event.event === "turn_settled") {
        const data = event.data as unknown as TurnSettledData;
        report({ type: "harness.settled", outcome: data.outcome, text: data.text, error: data.error, hseq: event.hseq });
        return;
      }
      report({ type: "harness.activity" });
      if (event.event === "prompt_accepted") return; // the ledger keeps the count (recordPrompts)
      const capped = { ...event, data: capEventData(event) };
      try {
        if (isPersistedHarnessEvent(event.event)) {
          deps.persist(agentId, capped).catch((err: unknown) => log(`could not persist ${event.event}: ${errorMessage(err)}`));
        } else {
          deps.publish(agentId, capped);
        }
      } catch (err) {
        log(`could not record ${event.event}: ${errorMessage(err)}`);
      }
    }

    function answer(to: HarnessClient, call: HostCallMessage) {
      if (pendingHostCalls >= MAX_PENDING_HOST_CALLS) {
        refusals(`refused a ${call.method} host call: ${MAX_PENDING_HOST_CALLS} already pending`);
        to.answer(call.id, { ok: false, error: `too many host calls in flight (at most ${MAX_PENDING_HOST_CALLS}); retry when one has answered` });
        return;
      }
      pendingHostCalls++;
      Promise.resolve()
        .then(() => deps.hostCall(agentId, call))
        .then(
          (data) => to.answer(call.id, { ok: true, data }),
          (err: unknown) => to.answer(call.id, { ok: false, error: errorMessage(err) }),
        )
        .catch((err: unknown) => log(`answering host call failed: ${errorMessage(err)}`))
        .finally(() => pendingHostCalls--);
    }

    receive((command) => {
      void ready
        .then((c) => run(c, command))
        .catch((err: unknown) => {
          if (command.type === "harness.steer") report({ type: "harness.steered", requestId: command.requestId, message: command.message, ok: false, error: errorMessage(err) });
          else deps.log(`harness command ${command.type} for ${agentId} failed: ${errorMessage(err)}`);
        });
    });

    async function run(c: HarnessClient, command: HarnessCommandEvent): Promise<void> {
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
            report({ type: "harness.steered", requestId: command.requestId, message: command.message, ok: false, idle, error: errorMessage(err) });
          }
          return;
      }
    }

    return () => {
      abort.abort();
      if (client && deps.clients.get(agentId) === client) deps.clients.delete(agentId);
      client?.close();
    };
  });
}
