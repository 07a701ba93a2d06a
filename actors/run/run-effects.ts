import type { AgentEvent } from "../../machines/agent.types.ts";
import { errorMessage } from "../../src/errors.ts";
import type { ModelGateway } from "../../src/gateway/gateway.ts";
import type { HostCallMessage } from "../../src/harness/protocol.ts";
import type { Ledger } from "../../src/ledger/ledger.ts";
import { endingKey, hseqKey, promptsKey } from "../../src/ledger/ledger-keys.ts";
import type { ToolRefusal } from "../../src/ledger/run-events.ts";
import type { ResultStore } from "../../src/results/result-store.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { AgentStatus } from "../../src/swarm-api.ts";
import { createHarnessEffect, type HarnessEffect } from "../effects/harness.actor.ts";
import { createSandboxActors } from "../effects/sandbox.actors.ts";
import type { Admit } from "../start-queue.ts";
import type { AgentTable } from "./agent-table.ts";
import { createModelCaller } from "./model-caller.ts";
import { planProvision } from "./provision-plan.ts";
import { indexCount } from "./restore-plan.ts";
import type { RunWriter } from "./run-writer.ts";

/** What the agent machines' effects need of their run and of the daemon. */
export interface RunEffectsDeps {
  runId: string;
  runtime: SandboxRuntime;
  ledger: Pick<Ledger, "getIndex" | "publish">;
  results: Pick<ResultStore, "read">;
  gateway: Pick<ModelGateway, "open" | "close" | "catalog">;
  /** The daemon's start line. */
  admit: Admit;
  hibernateAfterMs: number;
  onHarnessReconnect?: () => void;
  table: Pick<AgentTable, "require">;
  writer: RunWriter;
  /** How the agent ended, if it did (for the inputs of a `waitFor`). */
  outcomeOf(agentId: string): string | null;
  /** An agent's own call to the service (`spawn_agent`, `await_result`, `permission`). */
  hostCall(agentId: string, call: HostCallMessage, signal: AbortSignal): Promise<unknown>;
  /** Record a tool call swarmd refused (a host call past the queue, a model call the gateway refused); never throws. */
  refused(agentId: string, refusal: ToolRefusal): void;
  /** Resolves once the agent's sandbox exists. */
  whenLive(agentId: string, signal: AbortSignal): Promise<void>;
  /** The spend gate before each model call. */
  admitSpend(agentId: string, signal: AbortSignal): Promise<void>;
  send(agentId: string, event: AgentEvent): void;
  status(agentId: string): AgentStatus | null;
  /** Resolves at the run's next change; rejects when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<unknown>;
  /** The daemon's log, and the run's (its lines named with the run). */
  log(message: string): void;
  runLog(message: string): void;
}

/** The agent machine's effects for one run (provision, reattach, freeze, thaw, close, harness), and its harness effect. */
export function createRunEffects(deps: RunEffectsDeps) {
  const { runId, runtime, ledger, writer, table } = deps;
  const counted = async (key: string) => indexCount(await ledger.getIndex(key));
  const harness: HarnessEffect = createHarnessEffect({
    runtime,
    recordedHseq: (agentId) => counted(hseqKey(agentId)),
    recordedPrompts: (agentId) => counted(promptsKey(agentId)),
    recordPrompts: (agentId, n, hseq) =>
      writer.append(
        [],
        [
          { key: promptsKey(agentId), value: String(n) },
          { key: hseqKey(agentId), value: String(hseq) },
        ],
      ),
    persist: (agentId, event) => writer.harnessEvent(agentId, event),
    publish: (agentId, event) => ledger.publish(runId, { type: event.event, agentId, data: event.data }),
    hostCall: deps.hostCall,
    refused: deps.refused,
    log: deps.log,
    admit: deps.admit,
    hibernateAfterMs: deps.hibernateAfterMs,
    onReconnect: deps.onHarnessReconnect,
  });
  const actors = {
    ...createSandboxActors({
      runtime,
      openGateway: (agentId, sandboxId) => {
        // A full disk holds a model call (its usage, its script place) until there is room again, as held time.
        const holding = (on: boolean) => deps.send(agentId, { type: on ? "gateway.hold" : "gateway.release" });
        return deps.gateway.open(
          runtime.controlDir(sandboxId),
          createModelCaller(
            {
              spec: table.require(agentId).meta.spec,
              catalog: deps.gateway.catalog,
              store: {
                getIndex: (key) => ledger.getIndex(key),
                put: (key, value) => writer.appendWaiting([], [{ key, value }], holding),
              },
              admit: (signal) => deps.admitSpend(agentId, signal),
              send: (event) => deps.send(agentId, event),
              status: () => deps.status(agentId),
              append: (events) => writer.appendWaiting(events, [], holding),
              refused: (refusal) => deps.refused(agentId, refusal),
              nextChange: deps.nextChange,
            },
            agentId,
          ),
        );
      },
      closeGateway: (sandboxId) => deps.gateway.close(runtime.controlDir(sandboxId)),
      plan: (input, signal) =>
        planProvision(
          {
            runId,
            table,
            whenLive: deps.whenLive,
            resultOf: (agentId) => deps.results.read(agentId),
            outcomeOf: deps.outcomeOf,
          },
          input.agentId,
          signal,
        ),
      recordEnding: async ({ agentId, ending }) => {
        // Closed even when the ending cannot be recorded (a full disk): a sandbox left running is
        // worse than an end a restart takes for a lost agent.
        await writer
          .put(endingKey(agentId), JSON.stringify(ending))
          .catch((err: unknown) =>
            deps.runLog(
              `agent ${agentId}: its ending could not be recorded before its sandbox closed: ${errorMessage(err)}`,
            ),
          );
      },
      admit: deps.admit,
      log: deps.runLog,
    }),
    harness: harness.logic,
  };
  return { actors, harness };
}
