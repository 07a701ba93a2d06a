import { type AnyEventObject, createActor, fromCallback, fromPromise, SimulatedClock } from "xstate";
import { agentMachine } from "../../machines/agent.machine.ts";
import type {
  AgentInput,
  Fact,
  HarnessActorInput,
  HarnessCommandEvent,
  HarnessReportEvent,
  RestoredLive,
  StartState,
} from "../../machines/agent.types.ts";
import { type MemberAnswer, runMachine } from "../../machines/run.machine.ts";

/** Effects of an agent machine replaced by in-memory fakes that record what was asked. */
export function fakeEffects() {
  const calls: string[] = [];
  const harnesses = new Map<string, { send: (e: HarnessReportEvent) => void; commands: HarnessCommandEvent[] }>();
  let failFreeze: string | undefined;
  let heldFreeze: Promise<void> | undefined;
  const agent = agentMachine.provide({
    actors: {
      provision: fromPromise(async ({ input }) => {
        calls.push(`provision:${input.agentId}`);
      }),
      harness: fromCallback<HarnessCommandEvent, HarnessActorInput>(({ sendBack, receive, input }) => {
        const entry = {
          send: (e: HarnessReportEvent) => sendBack(e as AnyEventObject),
          commands: [] as HarnessCommandEvent[],
        };
        harnesses.set(input.agentId, entry);
        receive((command) => {
          entry.commands.push(command);
          calls.push(`${command.type}:${input.agentId}`);
        });
      }),
      freeze: fromPromise(async ({ input }) => {
        if (failFreeze === input.agentId) throw new Error("freezer broke");
        await heldFreeze;
        calls.push(`freeze:${input.agentId}`);
      }),
      thaw: fromPromise(async ({ input }) => {
        calls.push(`thaw:${input.agentId}`);
      }),
      close: fromPromise(async ({ input }) => {
        calls.push(`close:${input.agentId}`);
      }),
    },
  });
  return {
    agent,
    calls,
    harnesses,
    failFreezeOf: (id: string) => (failFreeze = id),
    /** Every freeze from now on finishes only once `until` resolves. */
    holdFreeze: (until: Promise<void>) => (heldFreeze = until),
  };
}

type AgentInputFields = Omit<AgentInput, "start" | "restored"> & { start: StartState; restored: RestoredLive };

export function startRun(
  effects: ReturnType<typeof fakeEffects>,
  clock = new SimulatedClock(),
  memberTimeoutMs?: number,
) {
  const run = createActor(runMachine.provide({ actors: { agent: effects.agent } }), {
    input: { runId: "r_1", memberTimeoutMs },
    clock,
  });
  const facts: Array<{ agentId: string; fact: Fact }> = [];
  const done: Array<{ requestId: string; results: MemberAnswer[] }> = [];
  run.on("control.done", (e) => done.push(e));
  run.start();
  const add = (
    input: Partial<AgentInputFields> & { agentId: string },
    parentAgentId: string | null = null,
    waitFor: string[] = [],
    restored = false,
  ) => {
    run.send({
      type: "agent.add",
      parentAgentId,
      waitFor,
      counted: restored,
      input: {
        runId: "r_1",
        sandboxId: `s-${input.agentId}`,
        keepAlive: false,
        turnMaxMs: 1_000,
        ...input,
        ...(input.restored ? {} : { start: input.start ?? "provisioning" }),
      } as AgentInput,
    });
    const child = run.getSnapshot().children[input.agentId];
    child?.on("fact", (e) => {
      facts.push({ agentId: e.agentId, fact: e.fact });
    });
  };
  const stateOf = (agentId: string) => JSON.stringify(run.getSnapshot().children[agentId]?.getSnapshot().value);
  return { run, clock, facts, done, add, stateOf };
}

export const flush = () => new Promise((resolve) => setImmediate(resolve));
