import { fromPromise } from "xstate";
import type { CloseInput, ProvisionInput, SandboxActorInput } from "../../machines/agent.types.ts";
import type { ProvisionRequest, SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { Admit } from "../start-queue.ts";
import type { HarnessHolds } from "./harness-holds.ts";

/** How to make one agent's sandbox: fresh or forked from its parent, and the inputs it starts with. */
export interface ProvisionPlan {
  request: ProvisionRequest;
  /** The live parent's sandbox to fork, or null for a fresh sandbox (the root). */
  parentSandboxId: string | null;
  /** `/inputs/<name>` → content (results of the agents named in `waitFor`). */
  inputs: Record<string, string>;
}

/** The agent machine's sandbox effects, each handed the machine's abort signal. */
export interface SandboxActorDeps {
  runtime: SandboxRuntime;
  plan(input: ProvisionInput, signal: AbortSignal): Promise<ProvisionPlan>;
  /** Make how the agent ends durable before its sandbox goes, so a crash mid-close is not taken for a lost agent. */
  recordEnding(input: CloseInput): Promise<void>;
  /** Serve the sandbox's model gateway socket; before its harness starts, which calls through it. */
  openGateway(agentId: string, sandboxId: string): Promise<void>;
  closeGateway(sandboxId: string): Promise<void>;
  /** Make the sandbox and start its harness once the start line admits it. */
  admit: Admit;
  /** Agents paused or pausing, whose hibernated harness must not be woken meanwhile. */
  holds: HarnessHolds;
}

export function createSandboxActors({
  runtime,
  plan,
  recordEnding,
  openGateway,
  closeGateway,
  admit,
  holds,
}: SandboxActorDeps) {
  return {
    // The plan waits for the parent's sandbox; making this one and starting its harness waits for
    // a start slot, so the harness's start deadline counts from its real start.
    provision: fromPromise<void, ProvisionInput>(async ({ input, signal }) => {
      const p = await plan(input, signal);
      await admit(input.agentId, signal, async () => {
        if (p.parentSandboxId) await runtime.fork(p.parentSandboxId, p.request, signal);
        else await runtime.provision(p.request, signal);
        if (Object.keys(p.inputs).length > 0) await runtime.writeInputs(input.sandboxId, p.inputs, signal);
        await openGateway(input.agentId, input.sandboxId);
        signal.throwIfAborted();
        await runtime.startHarness(input.sandboxId, signal);
      });
    }),
    // Held from before the freeze is asked (a hibernated harness is not woken while paused) until thawed.
    freeze: fromPromise<void, SandboxActorInput>(async ({ input, signal }) => {
      holds.hold(input.agentId);
      try {
        await runtime.freeze(input.sandboxId, signal);
      } catch (err) {
        holds.release(input.agentId);
        throw err;
      }
    }),
    thaw: fromPromise<void, SandboxActorInput>(async ({ input, signal }) => {
      await runtime.thaw(input.sandboxId, signal);
      holds.release(input.agentId);
    }),
    // Closing must finish even when the machine moves on: it is the last thing an agent does.
    close: fromPromise<void, CloseInput>(async ({ input }) => {
      await recordEnding(input);
      await runtime.close(input.sandboxId, new AbortController().signal);
      await closeGateway(input.sandboxId).catch(() => undefined);
    }),
  };
}
