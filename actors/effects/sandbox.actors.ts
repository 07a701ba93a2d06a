import { fromPromise } from "xstate";
import type {
  CloseInput,
  CloseOutput,
  ProvisionInput,
  ProvisionOutput,
  ReattachInput,
  SandboxActorInput,
} from "../../machines/agent.types.ts";
import { errorMessage } from "../../src/errors.ts";
import { LOCAL_NODE_ID, type ProvisionRequest, type SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { Admit } from "../start-queue.ts";

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
  log(message: string): void;
}

export function createSandboxActors({
  runtime,
  plan,
  recordEnding,
  openGateway,
  closeGateway,
  admit,
  log,
}: SandboxActorDeps) {
  return {
    // The plan waits for the parent's sandbox; making this one and starting its harness waits for
    // a start slot, so the harness's start deadline counts from its real start.
    provision: fromPromise<ProvisionOutput, ProvisionInput>(async ({ input, signal }) => {
      const p = await plan(input, signal);
      return admit(input.agentId, signal, async () => {
        // Provisioned again after a restart: whatever was half made under this id goes first.
        if (input.again) await runtime.close(input.sandboxId, signal);
        const info = p.parentSandboxId
          ? await runtime.fork(p.parentSandboxId, p.request, signal)
          : await runtime.provision(p.request, signal);
        if (Object.keys(p.inputs).length > 0) await runtime.writeInputs(input.sandboxId, p.inputs, signal);
        await openGateway(input.agentId, input.sandboxId);
        signal.throwIfAborted();
        await runtime.startHarness(input.sandboxId, signal);
        return { node: info.node ?? LOCAL_NODE_ID };
      });
    }),
    // After a restart. The ledger wins over the sandbox: a crash between a freeze (or thaw) and its
    // ledger event left the sandbox out of step with what the operator was told.
    reattach: fromPromise<void, ReattachInput>(async ({ input, signal }) => {
      const info = await runtime.inspect(input.sandboxId, signal);
      if (!info) throw new Error("its sandbox no longer exists");
      if (info.status === "gone") throw new Error(info.reason ?? "its sandbox's processes vanished");
      if (input.paused && info.status === "running") {
        log(`sandbox ${input.sandboxId} runs but its agent is recorded paused: freezing it again`);
        await runtime.freeze(input.sandboxId, signal);
      } else if (!input.paused && info.status === "frozen") {
        log(`sandbox ${input.sandboxId} is frozen but its agent is recorded running: thawing it`);
        await runtime.thaw(input.sandboxId, signal);
      }
      // Its harness lived on and calls its model as before. A model the catalogue no longer has
      // cannot be served: its calls then fail, and its turns with them.
      await openGateway(input.agentId, input.sandboxId).catch((err: unknown) =>
        log(`agent ${input.agentId}: its model gateway could not be opened again: ${errorMessage(err)}`),
      );
    }),
    freeze: fromPromise<void, SandboxActorInput>(({ input, signal }) => runtime.freeze(input.sandboxId, signal)),
    thaw: fromPromise<void, SandboxActorInput>(({ input, signal }) => runtime.thaw(input.sandboxId, signal)),
    // Closing must finish even when the machine moves on: it is the last thing an agent does.
    close: fromPromise<CloseOutput, CloseInput>(async ({ input }) => {
      // A sandbox on a node swarmd cannot reach ends once the node answers again (its stop then
      // takes effect), or is lost if the swarm declares the node down first.
      const lost = await runtime.whenReachable?.(input.sandboxId, new AbortController().signal).then(
        () => undefined,
        (err: unknown) => errorMessage(err),
      );
      const error = lost === undefined ? undefined : `agent lost: ${lost}`;
      if (error !== undefined) input = { ...input, ending: { outcome: "lost", error } };
      await recordEnding(input);
      await runtime.close(input.sandboxId, new AbortController().signal);
      await closeGateway(input.sandboxId).catch(() => undefined);
      return error === undefined ? {} : { lost: error };
    }),
  };
}
