import { EventEmitter, once } from "node:events";

/**
 * Agents whose sandbox is frozen or being frozen (a pause): a hibernated harness of theirs must
 * not be started again until they are thawed. The freeze effect holds an agent before it asks the
 * runtime to freeze and releases it once thawed; a wake checks the hold right before it asks the
 * runtime to start the harness. The runtime orders one sandbox's calls as they were made, so a
 * wake either starts the harness before the freeze (which then freezes it) or sees the hold.
 */
export class HarnessHolds {
  readonly #held = new Set<string>();
  readonly #released = new EventEmitter().setMaxListeners(0);

  hold(agentId: string): void {
    this.#held.add(agentId);
  }

  release(agentId: string): void {
    if (this.#held.delete(agentId)) this.#released.emit(agentId);
  }

  isHeld(agentId: string): boolean {
    return this.#held.has(agentId);
  }

  /** Resolves once the agent is not held (at once when it is not); rejects when `signal` aborts. */
  async whenReleased(agentId: string, signal: AbortSignal): Promise<void> {
    while (this.#held.has(agentId)) await once(this.#released, agentId, { signal });
  }
}
