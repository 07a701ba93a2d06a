/**
 * Which run each agent belongs to, for the routes that name an agent alone (`/agents/:agentId/…`).
 * One per daemon: the service reads it, and each run adds the agents it takes on (a spawn records
 * its child here before its ledger write) and removes them when it is purged. A registry below both,
 * so a spawn writes down to it rather than calling back up into the service.
 */
export class AgentDirectory {
  readonly #runs = new Map<string, string>();

  add(agentId: string, runId: string): void {
    this.#runs.set(agentId, runId);
  }

  /** The run of the agent, if any run took it on. */
  runOf(agentId: string): string | undefined {
    return this.#runs.get(agentId);
  }

  remove(agentIds: Iterable<string>): void {
    for (const agentId of agentIds) this.#runs.delete(agentId);
  }
}
