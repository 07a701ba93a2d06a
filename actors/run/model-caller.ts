import type { AgentEvent } from "../../machines/agent.types.ts";
import type { ModelCaller } from "../../src/gateway/model-caller.ts";
import type { ModelCatalog } from "../../src/gateway/models.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import type { RunEventInput, ToolRefusal } from "../../src/ledger/run-events.ts";
import type { AgentSpec } from "../../src/spec/agent-spec.ts";
import type { AgentStatus } from "../../src/swarm-api.ts";
import { type CursorStore, LedgerScriptCursor } from "./script-cursor.ts";

/** What the gateway's view of one agent is made of. */
export interface ModelCallerDeps {
  spec: AgentSpec;
  catalog: Pick<ModelCatalog, "resolve">;
  /** Where a scripted agent's place in its script is kept. */
  store: CursorStore;
  /** The spend gate before each call (Spend.admit). */
  admit(signal: AbortSignal): Promise<void>;
  /** Tell the agent's machine (`gateway.hold` / `gateway.release`). */
  send(event: AgentEvent): void;
  status(): AgentStatus | null;
  append(events: RunEventInput[]): Promise<unknown>;
  /** Record a model call the gateway refused as the agent's `tool_refused`; never throws. */
  refused(refusal: ToolRefusal): void;
  /** Resolves at the run's next change; rejects when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<unknown>;
}

/** The agent as its gateway socket serves it: its model, script, budgets, metering and quiet clock. */
export function createModelCaller(deps: ModelCallerDeps, agentId: string): ModelCaller {
  return {
    agentId,
    model: deps.spec.script ? SCRIPTED_MODEL : deps.catalog.resolve(deps.spec.model!, "spec.model"),
    script: deps.spec.script,
    cursor: new LedgerScriptCursor(deps.store, agentId),
    admit: deps.admit,
    holding: (on) => deps.send({ type: on ? "gateway.hold" : "gateway.release" }),
    record: async (usage) => {
      await deps.append([{ type: "model_usage", agentId, data: usage }]);
    },
    refused: (message) => deps.refused({ tool: "model", code: "MODEL_CALL_REFUSED", message }),
    whenRunning: async (signal) => {
      while (deps.status() === "paused") await deps.nextChange(signal);
    },
  };
}
