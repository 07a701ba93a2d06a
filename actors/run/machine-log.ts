import type { InspectionEvent } from "xstate";
import { MACHINE_TRANSITIONS_KEPT, type MachineTransition } from "../../src/swarm-api.ts";

/**
 * The latest transitions of each agent machine of a run, from XState's inspection events: what
 * `GET /agents/:agentId/machine` shows. Only changes of state value are kept (an event a state
 * takes without moving, such as a harness's activity, is not a transition here), at most
 * `MACHINE_TRANSITIONS_KEPT` per agent.
 */
export class MachineLog {
  readonly #transitions = new Map<string, MachineTransition[]>();
  readonly #last = new Map<string, string>();

  /** `isAgent`: whether an actor id names an agent of the run (its machine's actor has the agent's id). */
  constructor(private readonly isAgent: (actorId: string) => boolean) {}

  observe(event: InspectionEvent): void {
    if (event.type !== "@xstate.snapshot") return;
    const agentId = (event.actorRef as { id?: unknown }).id;
    if (typeof agentId !== "string" || !this.isAgent(agentId)) return;
    const value = (event.snapshot as { value?: unknown }).value;
    const key = JSON.stringify(value);
    if (this.#last.get(agentId) === key) return;
    this.#last.set(agentId, key);
    const list = this.#transitions.get(agentId) ?? [];
    list.push({ at: Date.now(), event: event.event.type, value });
    if (list.length > MACHINE_TRANSITIONS_KEPT) list.shift();
    this.#transitions.set(agentId, list);
  }

  of(agentId: string): MachineTransition[] {
    return [...(this.#transitions.get(agentId) ?? [])];
  }
}
