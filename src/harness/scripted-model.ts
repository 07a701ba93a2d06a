import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  getApiProvider,
  registerApiProvider,
  registerFauxProvider,
  unregisterApiProviders,
  type AssistantMessage,
  type Context,
  type Model,
  type SimpleStreamOptions,
} from "@mariozechner/pi-ai";
import type { ScriptStep } from "../spec/agent-spec.ts";

const SCRIPT_API = "swarmd-script";
const ECHO_STEP: ScriptStep = { text: "{{lastUserMessage}}" };
let created = 0;

/**
 * A model that answers from an agent spec's `script`, one step per model call across the agent's
 * whole life; exhausted, it echoes the newest user message. Each answer is streamed by pi-ai's faux
 * provider, registered per call so that a step's `delayMs` sets its pace (faux paces by tokens per
 * second, one rate per registration).
 */
export function createScriptedModel(script: readonly ScriptStep[]): Model<string> {
  let cursor = 0;
  // An API of its own: agents sharing one process (the memory runtime's) each answer from their own script.
  const api = `${SCRIPT_API}-${++created}`;
  const run = (model: Model<string>, context: Context, options?: SimpleStreamOptions) => {
    const step = script[cursor++] ?? ECHO_STEP;
    const message = toAssistantMessage(step, context);
    const faux = registerFauxProvider({
      provider: model.provider,
      models: [{ id: model.id }],
      tokensPerSecond: step.delayMs ? tokensPerSecond(message, step.delayMs) : undefined,
      // Small chunks so that a paced answer arrives as many deltas.
      tokenSize: step.delayMs ? { min: 1, max: 1 } : undefined,
    });
    faux.setResponses([message]);
    const provider = getApiProvider(faux.api);
    if (!provider) throw new Error("faux provider did not register");
    const stream = provider.streamSimple(faux.getModel(), context, options);
    void stream.result().finally(() => faux.unregister());
    return stream;
  };
  registerApiProvider({ api, stream: run, streamSimple: run }, api);
  return {
    id: "scripted",
    name: "Scripted model",
    api,
    provider: "swarmd-script",
    baseUrl: "http://127.0.0.1:0",
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200_000,
    maxTokens: 16_384,
  };
}

/** Forget a scripted model's provider, for a process that outlives its agents; other models are left alone. */
export function releaseScriptedModel(model: Model<string>): void {
  if (model.api.startsWith(`${SCRIPT_API}-`)) unregisterApiProviders(model.api);
}

function toAssistantMessage(step: ScriptStep, context: Context): AssistantMessage {
  if ("text" in step) return fauxAssistantMessage(fauxText(fillTemplates(step.text, context)));
  const calls = "tools" in step ? step.tools : [{ tool: step.tool, args: step.args }];
  return fauxAssistantMessage(
    calls.map((call) => fauxToolCall(call.tool, call.args)),
    { stopReason: "toolUse" },
  );
}

/** Replace `{{lastUserMessage}}` and `{{lastToolResult}}` with the newest such message's text. */
function fillTemplates(text: string, context: Context): string {
  return text
    .replaceAll("{{lastUserMessage}}", () => newestText(context, "user"))
    .replaceAll("{{lastToolResult}}", () => newestText(context, "toolResult"));
}

function newestText(context: Context, role: "user" | "toolResult"): string {
  for (let i = context.messages.length - 1; i >= 0; i--) {
    const message = context.messages[i];
    if (message?.role !== role) continue;
    const content = message.content;
    if (typeof content === "string") return content;
    return content.map((block) => (block.type === "text" ? block.text : "")).join("");
  }
  return "";
}

// faux streams ceil(chunkChars/4) tokens per chunk at `rate` tokens per second.
function tokensPerSecond(message: AssistantMessage, delayMs: number): number {
  const chars = message.content.reduce(
    (sum, block) => sum + (block.type === "text" ? block.text.length : block.type === "toolCall" ? JSON.stringify(block.arguments).length : 0),
    0,
  );
  return Math.max(1, Math.ceil(chars / 4)) / (delayMs / 1000);
}
