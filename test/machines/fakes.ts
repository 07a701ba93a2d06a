import { type AnyEventObject, createActor, fromCallback, fromPromise, SimulatedClock } from "xstate";
import { agentMachine } from "../../machines/agent.machine.ts";
import type {
  AgentInput,
  Fact,
  HarnessActorInput,
  HarnessCommandEvent,
  HarnessReportEvent,
  RestoredLive,
} from "../../machines/agent.types.ts";
import { addAgent, type MemberAnswer, runMachine } from "../../machines/run.machine.ts";

/** Effects of an agent machine replaced by in-memory fakes that record what was asked. */
export function fakeEffects() {
  const calls: string[] = [];
  /** Agents whose freeze began, in order (`calls` has those that finished). */
  const freezing: string[] = [];
  const harnesses = new Map<
    string,
    { input: HarnessActorInput; send: (e: HarnessReportEvent) => void; commands: HarnessCommandEvent[] }
  >();
  let failFreeze: string | undefined;
  let heldFreeze: Promise<void> | undefined;
  const agent = agentMachine.provide({
    actors: {
      provision: fromPromise(async ({ input }) => {
        calls.push(`provision:${input.agentId}`);
        return { node: "local" };
      }),
      harness: fromCallback<HarnessCommandEvent, HarnessActorInput>(({ sendBack, receive, input }) => {
        const entry = {
          input,
          send: (e: HarnessReportEvent) => sendBack(e as AnyEventObject),
          commands: [] as HarnessCommandEvent[],
        };
        harnesses.set(input.agentId, entry);
        receive((command) => {
          entry.commands.push(command);
          // Holding and releasing host calls come with every pause and run: kept out of the effects' order.
          if (command.type !== "harness.hold" && command.type !== "harness.release")
            calls.push(`${command.type}:${input.agentId}`);
        });
      }),
      freeze: fromPromise(async ({ input }) => {
        freezing.push(input.agentId);
        if (failFreeze === input.agentId) throw new Error("freezer broke");
        await heldFreeze;
        calls.push(`freeze:${input.agentId}`);
      }),
      reattach: fromPromise(async ({ input }) => {
        calls.push(`reattach:${input.agentId}`);
      }),
      thaw: fromPromise(async ({ input }) => {
        calls.push(`thaw:${input.agentId}`);
      }),
      close: fromPromise(async ({ input }) => {
        calls.push(`close:${input.agentId}`);
        return {};
      }),
    },
  });
  return {
    agent,
    calls,
    freezing,
    harnesses,
    failFreezeOf: (id: string) => (failFreeze = id),
    /** Every freeze from now on finishes only once `until` resolves. */
    holdFreeze: (until: Promise<void>) => (heldFreeze = until),
  };
}

/** What a test says of an agent to add: a new one (`start`, default provisioning) or a `restored` live one. */
type AddFields = Partial<Omit<AgentInput, "start">> & {
  agentId: string;
  start?: "spawning" | "provisioning";
  restored?: Partial<RestoredLive> & Pick<RestoredLive, "turns" | "inflight" | "liveChildren">;
};

/** A restored agent's input, with the fields a test leaves out at their quiet defaults. */
export const restoredLive = (
  fields: Partial<RestoredLive> & Pick<RestoredLive, "turns" | "inflight" | "liveChildren">,
): RestoredLive => ({ pausedBy: null, draining: null, approvals: 0, asleep: false, ...fields });

export function startRun(
  effects: ReturnType<typeof fakeEffects>,
  clock = new SimulatedClock(),
  memberTimeoutMs?: number,
  waveChunk?: number,
) {
  const run = createActor(runMachine, {
    input: { runId: "r_1", memberTimeoutMs, waveChunk },
    clock,
  });
  const facts: Array<{ agentId: string; fact: Fact }> = [];
  const done: Array<{ requestId: string; results: MemberAnswer[] }> = [];
  run.on("control.done", (e) => done.push(e));
  run.start();
  const add = (input: AddFields, parentAgentId: string | null = null, waitFor: string[] = [], restored = false) => {
    const { restored: live, start, ...rest } = input;
    const agent = addAgent(run, effects.agent, {
      waitFor,
      counted: restored,
      input: {
        runId: "r_1",
        sandboxId: `s-${input.agentId}`,
        keepAlive: false,
        turnMaxMs: 1_000,
        parentAgentId,
        ...rest,
        start: live ? { state: "live", restored: restoredLive(live) } : { state: start ?? "provisioning" },
      },
    });
    agent.on("fact", (e) => {
      facts.push({ agentId: e.agentId, fact: e.fact });
    });
  };
  /** The agent's actor, as the run holds it. */
  const agent = (agentId: string) => run.getSnapshot().context.actors[agentId];
  const stateOf = (agentId: string) => JSON.stringify(agent(agentId)?.getSnapshot().value);
  return { run, clock, facts, done, add, agent, stateOf };
}

export const flush = () => new Promise((resolve) => setImmediate(resolve));
