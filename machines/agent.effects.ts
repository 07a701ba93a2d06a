import { fromCallback, fromPromise } from "xstate";
import type {
  CloseInput,
  CloseOutput,
  HarnessActorInput,
  HarnessCommandEvent,
  ProvisionInput,
  ProvisionOutput,
  ReattachInput,
  SandboxActorInput,
} from "./agent.types.ts";

const notProvided = async (): Promise<never> => {
  throw new Error("effect not provided: pass it with machine.provide()");
};

/**
 * The agent machine's side effects, by name and type only: the machine stays pure, and
 * `actors/effects/` provides the real ones (tests provide fakes).
 */
export const effectSlots = {
  /** Make the sandbox (fresh or forked), write its inputs, serve its model gateway and start its harness. */
  provision: fromPromise<ProvisionOutput, ProvisionInput>(notProvided),
  /**
   * After a restart: check the sandbox is still there (rejects when it is gone), match its freezer
   * to the ledger and serve its model gateway again. The harness, which lived on, is reconnected
   * by the `harness` actor.
   */
  reattach: fromPromise<void, ReattachInput>(notProvided),
  /** The connection to the harness for as long as the agent is live: commands in, reports out. */
  harness: fromCallback<HarnessCommandEvent, HarnessActorInput>(() => {
    throw new Error("harness effect not provided");
  }),
  freeze: fromPromise<void, SandboxActorInput>(notProvided),
  thaw: fromPromise<void, SandboxActorInput>(notProvided),
  /** Record how the agent ends, then close its sandbox and its model gateway. */
  close: fromPromise<CloseOutput, CloseInput>(notProvided),
};
