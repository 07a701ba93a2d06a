import type { AnyStateMachine } from "xstate";
import { MACHINE_TRANSITIONS_KEPT, type MachineTransition } from "../../src/swarm-api.ts";

/**
 * The latest transitions of each agent machine of a run: what `GET /agents/:agentId/machine` shows.
 * Only changes of state value are kept (an event a state takes without moving, such as a harness's
 * activity, is not a transition here), at most `MACHINE_TRANSITIONS_KEPT` per agent.
 */
export class MachineLog {
  readonly #transitions = new Map<string, MachineTransition[]>();
  readonly #last = new Map<string, string>();

  /** The snapshot `event` led the agent's machine to (`xstate.init` for its first). */
  record(agentId: string, event: string, value: unknown): void {
    const key = JSON.stringify(value);
    if (this.#last.get(agentId) === key) return;
    this.#last.set(agentId, key);
    const list = this.#transitions.get(agentId) ?? [];
    list.push({ at: Date.now(), event, value });
    if (list.length > MACHINE_TRANSITIONS_KEPT) list.shift();
    this.#transitions.set(agentId, list);
  }

  of(agentId: string): MachineTransition[] {
    return [...(this.#transitions.get(agentId) ?? [])];
  }
}

/**
 * `machine` as the logic of actors whose every snapshot `log` hears of, with the event that made it
 * and the actor's id: the machine itself, only its transitions observed. (XState's inspection API
 * says the same, but for every action, event and microstep of every actor in the system: a tenth of
 * a subtree control's CPU.)
 */
export function loggedMachine<T extends AnyStateMachine>(
  machine: T,
  log: (actorId: string, event: string, value: unknown) => void,
): T {
  const logged: T = Object.create(machine);
  logged.getInitialSnapshot = (scope, input) => {
    const snapshot = machine.getInitialSnapshot(scope, input);
    log(scope.self.id, "xstate.init", snapshot.value);
    return snapshot;
  };
  logged.transition = (snapshot, event, scope) => {
    const next = machine.transition(snapshot, event, scope);
    // The same snapshot back: the event took no transition.
    if (next !== snapshot) log(scope.self.id, event.type, next.value);
    return next;
  };
  return logged;
}
