import type { HarnessAgent } from "./agent.ts";
import { HarnessError } from "./protocol.ts";
import type { EndpointAgent } from "./server.ts";

/** The harness's agent, made by the first command that needs it. */
export interface LazyAgent extends EndpointAgent {
  dispose(): Promise<void>;
}

/**
 * An agent made at the first command that needs one (`prompt`, `get_session_stats`), so a harness
 * answers on its socket before pi is loaded (most of its start-up time), and an agent never asked
 * anything never loads pi at all. What needs no agent is answered without one: no turn runs, so a
 * `steer` is refused with `NO_TURN_RUNNING`, an `abort` has nothing to do, `get_state` is idle.
 * Commands that arrive while it is being made wait for it, in their order. `make` failing fails
 * every command that needs the agent.
 */
export function lazyAgent(make: () => Promise<HarnessAgent>): LazyAgent {
  let agent: Promise<HarnessAgent> | undefined;
  const get = () => (agent ??= make());
  return {
    prompt: async (text) => (await get()).prompt(text),
    async steer(text) {
      if (!agent) throw new HarnessError("NO_TURN_RUNNING", "no turn is running");
      await (await agent).steer(text);
    },
    async abort() {
      if (agent) await (await agent).abort();
    },
    stats: async () => (await get()).stats(),
    state: async () => (agent ? { ...(await agent).state(), loaded: true } : { busy: false, queued: 0, loaded: false }),
    async dispose() {
      (await agent?.catch(() => undefined))?.dispose();
    },
  };
}
