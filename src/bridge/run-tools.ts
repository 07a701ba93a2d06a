import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { collectEvents } from "../client/collect-events.ts";
import type { SpecStore } from "../client/spec-store.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { isLive } from "../swarm-api.ts";
import { reportProgress } from "./progress.ts";
import { usageText } from "./spend-text.ts";
import {
  CreateRunInput,
  DeleteRunInput,
  ListRunsInput,
  RunIdInput,
  SpawnAgentInput,
  WatchEventsInput,
} from "./tool-inputs.ts";
import { guarded, ToolInputError, toolOk } from "./tool-result.ts";

export interface ToolDeps {
  client: SwarmClient;
  specs: SpecStore;
}

/** Run-level tools: POST and GET /runs, GET and DELETE /runs/:runId, the event stream, POST /runs/:runId/agents. */
export function registerRunTools(server: McpServer, { client, specs }: ToolDeps): void {
  server.registerTool(
    "swarm_create_run",
    {
      title: "Create a run",
      description:
        "Start a new run: a root agent in its own sandbox, created from an agent spec (inline `spec` or a saved `specName`). Returns runId and rootAgentId at once, with the root provisioning; follow it with swarm_watch_events, swarm_get_run or swarm_get_result on the rootAgentId.",
      inputSchema: CreateRunInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (input) =>
      guarded(async () => {
        const { spec: _spec, specName: _name, ...rest } = input;
        const created = await client.createRun({ ...rest, spec: resolveSpec(input, specs) });
        return toolOk(`Run ${created.runId} created; root agent ${created.rootAgentId} is ${created.state}.`, {
          ...created,
        });
      }),
  );

  server.registerTool(
    "swarm_list_runs",
    {
      title: "List runs",
      description:
        "Every run the service knows, newest first (at most limit, default 100), each at a glance: runId, rootAgentId, specName (the root's), createdAt, states (how many of its agents are spawning, provisioning, running, paused, done, aborted), agents (in all), live (not yet ended) and usage (its model calls summed: tokens, costUsd, calls). Read one run's tree with swarm_get_run.",
      inputSchema: ListRunsInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ limit }) =>
      guarded(async () => {
        const { runs } = await client.listRuns(limit);
        const list = runs.map((r) => `${r.runId} (${r.specName}, ${r.live} of ${r.agents} agent(s) live)`).join(", ");
        return toolOk(`${runs.length} run(s), newest first${list ? `: ${list}` : ""}.`, { runs });
      }),
  );

  server.registerTool(
    "swarm_get_run",
    {
      title: "Read a run's tree",
      description:
        "The run's spawn tree: every agent with its parent, depth, state (spawning, provisioning, running, paused, done, aborted; pausedBy operator, cascade or budget; draining true once a drain stop reached it), pendingPermissions (ids of its approval requests waiting for swarm_resolve_permission), outcome (success, failed, aborted, budget-exceeded, lost), usage (its own model calls: tokens, costUsd, calls) and subtreeUsage (it and every descendant); usage at the top sums the whole run. Budgets (caps and what is left) are in swarm_get_agent. asOf is the newest event seq it reflects; pass it as afterSeq to swarm_watch_events to follow from here.",
      inputSchema: RunIdInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ runId }) =>
      guarded(async () => {
        const run = await client.getRun(runId);
        const live = run.agents.filter((a) => isLive(a.state)).length;
        return toolOk(
          `Run ${run.runId}: ${run.agents.length} agent(s), ${live} live, ${usageText(run.usage)}, as of event ${run.asOf}.`,
          { ...run },
        );
      }),
  );

  server.registerTool(
    "swarm_delete_run",
    {
      title: "Delete a run",
      description:
        "Stop every live agent of the run (each ends with outcome aborted) and close their sandboxes. The run's tree and events stay readable, unless purge is set: then the run is removed for good (events, results, sandbox folders) and no longer exists.",
      inputSchema: DeleteRunInput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ runId, purge }) =>
      guarded(async () => {
        await client.deleteRun(runId, { purge });
        if (purge)
          return toolOk(
            `Run ${runId} purged: its live agents were aborted, then its events, results and sandboxes were removed.`,
            { runId, deleted: true, purged: true },
          );
        return toolOk(`Run ${runId} deleted: its live agents were aborted; its events are kept.`, {
          runId,
          deleted: true,
        });
      }),
  );

  server.registerTool(
    "swarm_watch_events",
    {
      title: "Watch a run's events",
      description:
        "Collect the run's events for a bounded window: those after afterSeq already recorded, then new ones as they happen, until maxEvents, an untilTypes event, the end of the run, or maxWaitSeconds. Returns the events and lastSeq: call again with afterSeq = lastSeq to continue without gaps. Lifecycle events: run_started, agent_spawned, agent_provisioned, agent_state_changed, agent_steered, handle_settled (a result is ready), agent_ended, budget_denied (a spawn refused, or a model call held because the agent or an ancestor ran out of maxTokens or maxCostUsd: its subtree is then paused), budget_changed (new spend caps), model_usage (one model call: provider, model, tokens, costUsd), permission_request (a tool call held for a decision: requestId, tool, args), permission_resolved (requestId, decision, message, by), agent_draining (a drain reached the agent: subtree, deadline; its agent_ended then has reason drained or drain-timeout); harness events: agent_start, agent_end, turn_start, turn_end, tool_start, tool_end, ...",
      inputSchema: WatchEventsInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ runId, ...window }, extra) =>
      guarded(async () => {
        const stop = reportProgress(extra, window.maxWaitSeconds, `watching ${runId}`);
        try {
          const got = await collectEvents(client, runId, { ...window, signal: extra.signal });
          const summary = `${got.events.length} event(s) of ${runId}; lastSeq ${got.lastSeq}; stopped by ${got.stoppedBy}${got.runOver ? "; the run is over (every agent ended)" : ""}.`;
          return toolOk(summary, { ...got });
        } finally {
          stop();
        }
      }),
  );

  server.registerTool(
    "swarm_spawn_agent",
    {
      title: "Spawn a child agent",
      description:
        "Spawn a child under a live agent of the run by forking the parent's sandbox (the child starts with the parent's files). With waitFor the child waits (state spawning) until those agents' results settle. A spawn refused by a budget still succeeds here; the child then ends with outcome budget-exceeded.",
      inputSchema: SpawnAgentInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (input) =>
      guarded(async () => {
        const { runId, spec: _spec, specName: _name, ...rest } = input;
        const spawned = await client.spawn(runId, { ...rest, spec: resolveSpec(input, specs) });
        return toolOk(`Agent ${spawned.agentId} spawned under ${input.parentAgentId}; it is ${spawned.state}.`, {
          runId,
          ...spawned,
        });
      }),
  );
}

/** Exactly one of an inline spec or a saved one's name. */
function resolveSpec(input: { spec?: AgentSpec; specName?: string }, specs: SpecStore): AgentSpec {
  if (input.spec && input.specName) throw new ToolInputError("Give either spec or specName, not both.");
  if (input.spec) return input.spec;
  if (input.specName) return specs.get(input.specName);
  throw new ToolInputError(
    "An agent spec is required: pass spec (inline) or specName (a spec saved with swarm_spec_add; see swarm_spec_list).",
  );
}
