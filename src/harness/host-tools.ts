import { Type } from "@mariozechner/pi-ai";
import { defineTool, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { HostCalls } from "./host-calls.ts";

const MAX_AWAIT_SECONDS = 240;
const MAX_FORK_COPIES = 32;

/** What the host tools need of the harness besides its host calls. */
export interface HostToolOptions {
  /**
   * Resolves once the conversation holds the assistant answer that made the call `toolCallId` (pi
   * records it a moment after the call starts): a fork from inside copies the conversation up to it.
   */
  recorded?(toolCallId: string, signal?: AbortSignal): Promise<void>;
}

/**
 * `spawn_agent` and `await_result`: tools whose work is done by the service, so that children an
 * agent makes obey budgets, appear in the run tree and are reached by subtree controls.
 */
export function createHostTools(host: HostCalls, options: HostToolOptions = {}): ToolDefinition[] {
  const spawnAgent = defineTool({
    name: "spawn_agent",
    label: "Spawn agent",
    description:
      "Start a child agent in a copy of your sandbox. Returns its agentId at once; use await_result to get what it produced. " +
      `With fork: true and prompts (1..${MAX_FORK_COPIES}), make copies of yourself instead: each starts from your conversation up to this call and your files now, then gets its own prompt; returns their agentIds.`,
    promptSnippet:
      "spawn_agent: start a child agent (forked from your sandbox) with a spec and a prompt, or fork copies of yourself",
    parameters: Type.Object({
      spec: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          description:
            "The child's agent spec (name, model or script, ...). With fork: optional changes to your own spec (name, model or script, approve, limits, maxTokens, maxCostUsd).",
        }),
      ),
      fork: Type.Optional(
        Type.Boolean({ description: "Make copies of yourself, conversation and all, one per prompt of prompts." }),
      ),
      prompts: Type.Optional(
        Type.Array(Type.String(), {
          minItems: 1,
          maxItems: MAX_FORK_COPIES,
          description: "With fork: one copy per prompt, each its next turn.",
        }),
      ),
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
    async execute(toolCallId, params, signal) {
      // A fork names the call it is made from; the copies' conversation ends with this call.
      if (params.fork === true) await options.recorded?.(toolCallId, signal);
      const sent = params.fork === true ? { ...params, toolCallId } : { ...params };
      const data = await host.call("spawn_agent", sent, signal);
      return { content: [{ type: "text", text: JSON.stringify(data) }], details: data };
    },
  });

  const awaitResult = defineTool({
    name: "await_result",
    label: "Await result",
    description:
      `Wait up to waitSeconds (max ${MAX_AWAIT_SECONDS}) for an agent's result. Returns its state (settled or pending), outcome and text. ` +
      'With agentIds instead of agentId, wait for several: mode "all" (default) answers every result once all settled, mode "first" the first to succeed (winner); unfinished ones are pending.',
    promptSnippet: "await_result: wait for a child agent's result, or for several (all, or the first success)",
    parameters: Type.Object({
      agentId: Type.Optional(Type.String()),
      agentIds: Type.Optional(Type.Array(Type.String(), { minItems: 1 })),
      mode: Type.Optional(Type.Union([Type.Literal("all"), Type.Literal("first")])),
      waitSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_AWAIT_SECONDS })),
    }),
    async execute(_id, params, signal) {
      const data = await host.call(
        "await_result",
        { ...params, waitSeconds: params.waitSeconds ?? MAX_AWAIT_SECONDS },
        signal,
      );
      return { content: [{ type: "text", text: JSON.stringify(data) }], details: data };
    },
  });

  return [spawnAgent, awaitResult] as ToolDefinition[];
}
