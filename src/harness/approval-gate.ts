import {
  createSyntheticSourceInfo,
  type Extension,
  type ExtensionContext,
  type ToolCallEvent,
  type ToolCallEventResult,
} from "@mariozechner/pi-coding-agent";
import { type ApproveRule, DAEMON_GATED_TOOLS, needsApproval } from "../spec/approve.ts";
import type { HostCalls } from "./host-calls.ts";

const PATH = "<swarmd:approve>";

/**
 * The agent's `approve` policy as a pi extension with one `tool_call` handler: a call the policy
 * holds waits for the operator's decision (a `permission` host call the daemon records and answers
 * once), and a deny blocks it with the decision's message, which the model reads as the tool's
 * error. `spawn_agent` and `await_result` are gated by the daemon itself. Anything that keeps the
 * decision from arriving (the turn aborted, an answer that is not one) blocks the call: fail closed.
 */
export function approvalGate(rules: readonly ApproveRule[], host: HostCalls): Extension | undefined {
  if (rules.length === 0) return undefined;
  const onToolCall = async (event: ToolCallEvent, ctx: ExtensionContext): Promise<ToolCallEventResult | undefined> => {
    if (DAEMON_GATED_TOOLS.has(event.toolName) || !needsApproval(rules, event.toolName, event.input)) return undefined;
    try {
      const answer = await host.call("permission", { tool: event.toolName, args: event.input }, ctx.signal);
      const { decision, message } = (answer ?? {}) as { decision?: unknown; message?: unknown };
      if (decision === "allow") return undefined;
      return {
        block: true,
        reason: typeof message === "string" && message !== "" ? message : "the operator denied this tool call",
      };
    } catch (err) {
      return {
        block: true,
        reason: `this tool call needs the operator's approval, which did not come: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
  };
  return {
    path: PATH,
    resolvedPath: PATH,
    sourceInfo: createSyntheticSourceInfo(PATH, { source: "swarmd" }),
    handlers: new Map([["tool_call", [onToolCall as (...args: unknown[]) => Promise<unknown>]]]),
    tools: new Map(),
    messageRenderers: new Map(),
    commands: new Map(),
    flags: new Map(),
    shortcuts: new Map(),
  };
}
