import { Type } from "@mariozechner/pi-ai";
import { defineTool, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { HostCalls } from "./host-calls.ts";

const MAX_AWAIT_SECONDS = 240;

/**
 * `spawn_agent` and `await_result`: tools whose work is done by the service, so that children an
 * agent makes obey budgets, appear in the run tree and are reached by subtree controls.
 */
export function createHostTools(host: HostCalls): ToolDefinition[] {
  const spawnAgent = defineTool({
    name: "spawn_agent",
    label: "Spawn agent",
    description:
      "Start a child agent in a copy of your sandbox. Returns its agentId at once; use await_result to get what it produced.",
    promptSnippet: "spawn_agent: start a child agent (forked from your sandbox) with a spec and a prompt",
    parameters: Type.Object({
      spec: Type.Record(Type.String(), Type.Unknown(), {
        description: "The child's agent spec (name, model or script, ...).",
      }),
      prompt: Type.Optional(Type.String({ description: "The child's first turn." })),
      waitFor: Type.Optional(
        Type.Array(Type.String(), {
          description: "Agent ids whose results must settle before the child starts; they appear in its /inputs.",
        }),
      ),
      budget: Type.Optional(
        Type.Object({
          spawnDepth: Type.Optional(Type.Integer({ minimum: 0 })),
          maxAgents: Type.Optional(Type.Integer({ minimum: 0 })),
          maxTokens: Type.Optional(
            Type.Integer({
              minimum: 0,
              description: "Most tokens the child and its descendants may spend (at most what you have left).",
            }),
          ),
          maxCostUsd: Type.Optional(
            Type.Number({
              minimum: 0,
              description: "Most dollars the child and its descendants may spend (at most what you have left).",
            }),
          ),
        }),
      ),
    }),
    async execute(_id, params, signal) {
      const data = await host.call("spawn_agent", { ...params }, signal);
      return { content: [{ type: "text", text: JSON.stringify(data) }], details: data };
    },
  });

  const awaitResult = defineTool({
    name: "await_result",
    label: "Await result",
    description: `Wait up to waitSeconds (max ${MAX_AWAIT_SECONDS}) for an agent's result. Returns its state (settled or pending), outcome and text.`,
    promptSnippet: "await_result: wait for a child agent's result",
    parameters: Type.Object({
      agentId: Type.String(),
      waitSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_AWAIT_SECONDS })),
    }),
    async execute(_id, params, signal) {
      const data = await host.call(
        "await_result",
        { agentId: params.agentId, waitSeconds: params.waitSeconds ?? MAX_AWAIT_SECONDS },
        signal,
      );
      return { content: [{ type: "text", text: JSON.stringify(data) }], details: data };
    },
  });

  return [spawnAgent, awaitResult] as ToolDefinition[];
}
