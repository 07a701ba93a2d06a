import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { type ControlResponse, MACHINE_TRANSITIONS_KEPT } from "../swarm-api.ts";
import { reportProgress } from "./progress.ts";
import type { ToolDeps } from "./run-tools.ts";
import { budgetText, usageText } from "./spend-text.ts";
import {
  AgentIdInput,
  ControlInput,
  GetResultInput,
  PromptAgentInput,
  SetBudgetInput,
  SteerAgentInput,
  StopAgentInput,
} from "./tool-inputs.ts";
import { guarded, toolOk } from "./tool-result.ts";

/** Agent tools: GET /agents/:agentId, its machine, budget, prompt, steer, pause, resume and stop, and its result. */
export function registerAgentTools(server: McpServer, { client }: ToolDeps): void {
  server.registerTool(
    "swarm_get_agent",
    {
      title: "Read an agent",
      description:
        'One agent\'s view: parent, depth, state (pausedBy "operator", "cascade" or "budget" when paused; draining true once a drain stop reached it), outcome, sandbox, pendingPermissions (its approval requests waiting for swarm_resolve_permission); usage (its own model calls: tokens, costUsd, calls) and subtreeUsage (it and every descendant); budget (maxTokens and maxCostUsd caps, null for none, and remainingTokens and remainingCostUsd it may still spend, ancestors\' caps included); and sessionStats when its harness answers and it is not paused.',
      inputSchema: AgentIdInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ agentId }) =>
      guarded(async () => {
        const agent = await client.getAgent(agentId);
        const paused = agent.pausedBy ? ` (paused by ${agent.pausedBy})` : "";
        return toolOk(
          `Agent ${agent.agentId} (${agent.specName}) is ${agent.state}${paused}${agent.outcome ? `, outcome ${agent.outcome}` : ""}; its subtree spent ${usageText(agent.subtreeUsage)}.`,
          { ...agent },
        );
      }),
  );

  server.registerTool(
    "swarm_get_machine",
    {
      title: "Read an agent's state machine",
      description: `The agent's state machine as the daemon runs it, to see where an agent is stuck and how it got there: value (the XState state value, e.g. {"live":{"running":"idle"}}), tags of that state (live, running, paused, ...), running (false when the agent ended before the daemon started: then value is null and tags empty) and transitions (at most the latest ${MACHINE_TRANSITIONS_KEPT} since the daemon started, oldest first: at, event, value).`,
      inputSchema: AgentIdInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ agentId }) =>
      guarded(async () => {
        const machine = await client.getMachine(agentId);
        const state = machine.running
          ? `is in ${JSON.stringify(machine.value)} (tags: ${machine.tags.join(", ") || "none"})`
          : "is not running (the agent ended before the daemon started)";
        return toolOk(
          `The machine of ${machine.agentId} ${state}; ${machine.transitions.length} transition(s) recorded.`,
          { ...machine },
        );
      }),
  );

  server.registerTool(
    "swarm_set_budget",
    {
      title: "Set an agent's spend budget",
      description:
        'Set new absolute spend caps for an agent and its whole subtree: maxTokens (tokens of every kind), maxCostUsd, or both. Returns its budget: the caps (null for none) and remainingTokens and remainingCostUsd, which ancestors\' caps can lower. Refused (HTTP 409) when a cap would leave the agent more than its parent has left. An agent whose lineage runs out is paused with its subtree (pausedBy "budget" on the agent that ran out); raising the cap does not resume it: call swarm_resume_agent with scope subtree on that agent afterwards.',
      inputSchema: SetBudgetInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async ({ agentId, maxTokens, maxCostUsd }) =>
      guarded(async () => {
        const answer = await client.setBudget(agentId, { maxTokens, maxCostUsd }); // an absent cap is left out of the JSON body
        return toolOk(`Budget of ${answer.agentId} set: ${budgetText(answer.budget)}.`, { ...answer });
      }),
  );

  server.registerTool(
    "swarm_prompt_agent",
    {
      title: "Prompt an agent",
      description:
        "Start a new turn on a live agent with this text. Returns at once; wait for the answer with swarm_get_result (waitSeconds) or swarm_watch_events.",
      inputSchema: PromptAgentInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ agentId, text }) =>
      guarded(async () => {
        await client.prompt(agentId, text);
        return toolOk(`Prompt accepted by ${agentId}; a new turn is starting.`, { agentId, accepted: true });
      }),
  );

  server.registerTool(
    "swarm_steer_agent",
    {
      title: "Steer an agent",
      description:
        'Send guidance to a live agent. delivery tells how it arrived: "steer" (into the running turn), "turn" (the agent was idle, so a new turn started) or "queued" (the agent is paused and gets it on resume).',
      inputSchema: SteerAgentInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ agentId, message, scope }) =>
      guarded(async () => {
        const steered = await client.steer(agentId, { message, scope });
        return toolOk(`Steer message delivered to ${agentId} as "${steered.delivery}".`, { agentId, ...steered });
      }),
  );

  const control = (
    name: string,
    title: string,
    description: string,
    act: (agentId: string, scope: "agent" | "subtree") => Promise<ControlResponse>,
  ) =>
    server.registerTool(
      name,
      {
        title,
        description,
        inputSchema: ControlInput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      },
      async ({ agentId, scope }) =>
        guarded(async () => {
          const answer = await act(agentId, scope);
          return toolOk(
            `${title} ${agentId}${scope === "subtree" ? " and its subtree" : ""}: ${membersLine(answer)}.`,
            { agentId, scope, ...answer },
          );
        }),
    );

  control(
    "swarm_pause_agent",
    "Pause",
    "Freeze a live agent's sandbox in place (its running tool is suspended and continues on resume). With scope subtree, parents are frozen before their children and children spawned later join the pause. One result per agent: applied, noop (already paused) or failed with the reason.",
    (agentId, scope) => client.pause(agentId, scope),
  );
  control(
    "swarm_resume_agent",
    "Resume",
    "Thaw a paused agent so it continues where it stopped. With scope subtree, children are resumed before the agent itself. One result per agent.",
    (agentId, scope) => client.resume(agentId, scope),
  );

  server.registerTool(
    "swarm_stop_agent",
    {
      title: "Stop an agent",
      description:
        'End an agent. Mode "abort" (default): abort its current turn and close its sandbox; it ends with outcome aborted, and with scope subtree leaves are stopped first. Mode "drain": the agents are marked draining (parents first) and this answers at once; each waits for its running turn, then ends as done (agent_ended reason "drained"); aborted at the deadline (drainTimeoutMs, default 10 minutes; reason "drain-timeout"). An agent that had already finished keeps its outcome. One result per agent.',
      inputSchema: StopAgentInput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ agentId, scope, mode, drainTimeoutMs }) =>
      guarded(async () => {
        const answer = await client.stop(agentId, { mode, scope, drainTimeoutMs }); // an absent timeout is left out of the JSON body
        const what = mode === "drain" ? "Drain" : "Stop";
        return toolOk(`${what} ${agentId}${scope === "subtree" ? " and its subtree" : ""}: ${membersLine(answer)}.`, {
          agentId,
          scope,
          mode,
          ...answer,
        });
      }),
  );

  server.registerTool(
    "swarm_get_result",
    {
      title: "Get an agent's result",
      description:
        'The agent\'s result: state "settled" with outcome and result text once a turn finished, or "pending" (result null) if it is still working after waitSeconds. Call again to keep waiting.',
      inputSchema: GetResultInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ agentId, waitSeconds }, extra) =>
      guarded(async () => {
        const stop = reportProgress(extra, waitSeconds, `waiting for the result of ${agentId}`);
        try {
          const result = await client.result(agentId, waitSeconds, { signal: extra.signal });
          const summary =
            result.state === "settled"
              ? `Result of ${agentId} is settled with outcome ${result.outcome}.`
              : `Result of ${agentId} is still pending after ${waitSeconds} s; call again to keep waiting.`;
          return toolOk(summary, { ...result });
        } finally {
          stop();
        }
      }),
  );
}

/** "2 applied, 1 failed (a_x: reason)". */
function membersLine({ results }: ControlResponse): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
  const failures = results
    .filter((r) => r.outcome === "failed")
    .map((r) => `${r.agentId}: ${r.error ?? "no reason given"}`);
  const line = [...counts].map(([outcome, n]) => `${n} ${outcome}`).join(", ") || "no agents affected";
  return failures.length > 0 ? `${line} (${failures.join("; ")})` : line;
}
