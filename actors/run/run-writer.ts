import type { Fact } from "../../machines/agent.types.ts";
import { isSwarmError } from "../../src/errors.ts";
import type { HarnessEventMessage } from "../../src/harness/protocol.ts";
import { isHarnessRecordedEvent } from "../../src/harness/protocol.ts";
import type { IndexPut, Ledger } from "../../src/ledger/ledger.ts";
import { hseqKey } from "../../src/ledger/ledger-keys.ts";
import type { RunEventInput } from "../../src/ledger/run-events.ts";
import type { ResultStore } from "../../src/results/result-store.ts";

type EndedData = Extract<RunEventInput, { type: "agent_ended" }>["data"];

/**
 * The run's only way into the ledger: typed events, appended in call order. It remembers the newest
 * write, so an answer can wait until what it did is recorded (`flushed`).
 */
export class RunWriter {
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ledger: Ledger,
    readonly runId: string,
    private readonly results: ResultStore,
    private readonly log: (message: string) => void,
  ) {}

  append(events: RunEventInput[], put: IndexPut[] = []): Promise<unknown> {
    const write = this.ledger.append(this.runId, events, put.length > 0 ? { put } : undefined);
    this.#tail = write.catch((err: unknown) => this.log(`ledger write failed for ${this.runId}: ${String(err)}`));
    return write;
  }

  /**
   * As `append`, but a write refused for want of space (`STORAGE_FULL`) is tried again each time the
   * ledger takes writes again, until it goes through: for the writes an agent's progress waits on (a
   * model call's usage, a script's place), so a full disk holds the agent instead of failing its
   * turn, and loses none of them. `holding` is told when the wait begins and ends (the quiet clock
   * stops meanwhile). `flushed` does not wait for the retries.
   */
  appendWaiting(events: RunEventInput[], put: IndexPut[], holding: (on: boolean) => void): Promise<unknown> {
    const first = this.append(events, put);
    return first.catch(async (err: unknown) => {
      if (!isSwarmError(err, "STORAGE_FULL")) throw err;
      holding(true);
      try {
        for (;;) {
          await this.ledger.whenWritable();
          try {
            return await this.ledger.append(this.runId, events, put.length > 0 ? { put } : undefined);
          } catch (again) {
            if (!isSwarmError(again, "STORAGE_FULL")) throw again;
          }
        }
      } finally {
        holding(false);
      }
    });
  }

  /** Index facts only, in order with the events. */
  put(key: string, value: string): Promise<unknown> {
    return this.append([], [{ key, value }]);
  }

  /** Resolves once every write so far is committed (or failed and logged). */
  flushed(): Promise<unknown> {
    return this.#tail;
  }

  /**
   * The ledger events (spec §6.1) that state a machine fact. A settled turn's text is stored first,
   * so `handle_settled` never announces a result that cannot be read.
   */
  fact(agentId: string, fact: Fact): Promise<unknown> {
    switch (fact.kind) {
      case "state":
        return this.append([
          { type: "agent_state_changed", agentId, data: { from: fact.from, to: fact.to, reason: fact.reason } },
        ]);
      case "provisioned":
        return this.append([
          { type: "agent_provisioned", agentId, data: { sandboxId: fact.sandboxId, node: fact.node } },
        ]);
      case "steered":
        return this.append([{ type: "agent_steered", agentId, data: { message: fact.message } }]);
      case "settled": {
        let resultRef: string | null;
        try {
          resultRef = fact.text === null ? null : this.results.write(agentId, fact.text);
        } catch (err) {
          // A disk with no room for the text has none for its event either: neither is recorded.
          this.log(`the result of agent ${agentId} could not be stored: ${String(err)}`);
          const failed = Promise.reject(err);
          failed.catch(() => undefined); // logged: a caller that does not wait for it must not crash the daemon
          return failed;
        }
        return this.append(
          [{ type: "handle_settled", agentId, data: { outcome: fact.outcome, resultRef } }],
          [{ key: hseqKey(agentId), value: String(fact.hseq) }],
        );
      }
      case "hibernated":
        return this.append([{ type: "agent_hibernated", agentId, data: { sessionStats: fact.sessionStats } }]);
      case "woke":
        return this.append([{ type: "agent_woke", agentId, data: {} }]);
      case "ended":
        return this.ended(agentId, fact.outcome, fact.error ?? null, fact.reason);
    }
  }

  ended(
    agentId: string,
    outcome: EndedData["outcome"],
    error: string | null,
    reason?: EndedData["reason"],
  ): Promise<unknown> {
    return this.append([
      { type: "agent_ended", agentId, data: { outcome, endedAt: Date.now(), error, ...(reason ? { reason } : {}) } },
    ]);
  }

  /**
   * The node of the agent's sandbox went out of the daemon's reach (`agent_unreachable`) or came
   * back (`agent_reachable`): what the runtime's `watch` reports as `unreachable` / `reachable`.
   */
  reachability(agentId: string, node: string, reachable: boolean): Promise<unknown> {
    return this.append([{ type: reachable ? "agent_reachable" : "agent_unreachable", agentId, data: { node } }]);
  }

  /** One harness event of the §6.2 list (approval events excepted: the daemon writes those), with its hseq recorded in the same batch; others are not persisted. */
  harnessEvent(agentId: string, event: HarnessEventMessage): Promise<unknown> {
    if (!isHarnessRecordedEvent(event.event)) return Promise.resolve();
    const data = { ...event.data, hseq: event.hseq, harnessAt: event.at };
    return this.append([{ type: event.event, agentId, data }], [{ key: hseqKey(agentId), value: String(event.hseq) }]);
  }
}
