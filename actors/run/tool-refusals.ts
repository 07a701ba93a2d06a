import { errorMessage } from "../../src/errors.ts";
import { createTokenBucket, type TokenBucket } from "../../src/harness/rate-gate.ts";
import type { RunEventInput, ToolRefusal } from "../../src/ledger/run-events.ts";

/** What recording refusals needs of the run. */
export interface ToolRefusalDeps {
  append(events: RunEventInput[]): Promise<unknown>;
  /** A timer of the run's, cleared when it closes. */
  timer(fire: () => void, delayMs: number): void;
  log(message: string): void;
}

/**
 * How fast one agent's refusals are written: a burst at once, then a steady rate. What comes faster
 * (a harness flooding host calls past its queue, a sandbox hammering its gateway) is counted and
 * written as one event with its `count` once the rate allows, so a flood costs the ledger a few
 * events a second and the count stays exact.
 */
export const REFUSAL_WRITES = { burst: 32, perSecond: 4 } as const;
const MAX_TOOL_CHARS = 64;
const MAX_MESSAGE_CHARS = 2_000;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (cut)` : text);

interface AgentRefusals {
  bucket: TokenBucket;
  /** Refusals waiting for the rate: how many, and the last one's words. */
  held: { last: ToolRefusal; count: number } | null;
}

/**
 * The run's record of the tool calls swarmd refused or could not carry out for its agents: each a
 * `tool_refused` event on the agent, which the view counts as its `toolErrors`. Recording never
 * throws and never waits: a refused call is answered whether or not its record is written.
 */
export class ToolRefusals {
  readonly #agents = new Map<string, AgentRefusals>();

  constructor(private readonly deps: ToolRefusalDeps) {}

  record(agentId: string, refusal: ToolRefusal): void {
    let agent = this.#agents.get(agentId);
    if (!agent) {
      agent = { bucket: createTokenBucket(REFUSAL_WRITES.burst, REFUSAL_WRITES.perSecond), held: null };
      this.#agents.set(agentId, agent);
    }
    if (agent.held) {
      agent.held.count++;
      agent.held.last = refusal;
      return;
    }
    const wait = agent.bucket.take(1);
    if (wait === 0) {
      this.#write(agentId, refusal, 1);
      return;
    }
    agent.held = { last: refusal, count: 1 };
    this.deps.timer(() => this.#flush(agentId), wait);
  }

  /** The run closes: what is held is written now (its timer would not fire). */
  close(): void {
    for (const agentId of this.#agents.keys()) this.#flush(agentId);
  }

  #flush(agentId: string): void {
    const agent = this.#agents.get(agentId);
    if (!agent?.held) return;
    const { last, count } = agent.held;
    agent.held = null;
    this.#write(agentId, last, count);
  }

  #write(agentId: string, refusal: ToolRefusal, count: number): void {
    const data = {
      tool: cut(refusal.tool, MAX_TOOL_CHARS),
      code: refusal.code,
      message: cut(refusal.message, MAX_MESSAGE_CHARS),
      count,
    };
    this.deps
      .append([{ type: "tool_refused", agentId, data }])
      .catch((err: unknown) =>
        this.deps.log(`could not record ${count} refused ${data.tool} call(s) of ${agentId}: ${errorMessage(err)}`),
      );
  }
}
