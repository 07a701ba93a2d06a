import { z } from "zod";
import {
  getAgent,
  getAgentMachine,
  getResult,
  pauseAgent,
  promptAgent,
  resumeAgent,
  setBudget,
  steerAgent,
  stopAgent,
} from "./agents.ts";
import { streamRunEvents } from "./events.ts";
import { adoptChanges, forkAgent, getChanges, waitForAgents } from "./forks.ts";
import {
  MACHINE_TRANSITIONS_KEPT,
  MAX_FORK_COPIES,
  MAX_WAIT_AGENTS,
  MAX_WAIT_MANY_MS,
  MAX_WAIT_SECONDS,
} from "./limits.ts";
import { listModels } from "./models.ts";
import { listNodes } from "./nodes.ts";
import { listPermissions, resolvePermission } from "./permissions.ts";
import { routeTool } from "./route-tool.ts";
import { createRun, deleteRun, getRun, listRuns, spawnAgent } from "./runs.ts";

/**
 * The bridge's tools that call a route (spec section 4.14): each names its route, and its input
 * is that route's fields (route-tool.ts) with what the model needs said differently. Field
 * descriptions here are for the model calling the tools: where a value comes from (which other
 * tool returns it) and what to do next; every other field shows the route's own description.
 */

const READ = { readOnlyHint: true, openWorldHint: true } as const;
const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;
const REPEATABLE = { ...WRITE, idempotentHint: true } as const;
const DESTRUCTIVE = { ...WRITE, destructiveHint: true, idempotentHint: true } as const;

const runId = { describe: 'Run id, "r_<hex>", as returned by swarm_create_run.' };
const agentId = {
  describe: 'Agent id, "a_<hex>", as returned by swarm_create_run (rootAgentId), swarm_spawn_agent or swarm_get_run.',
};
const spec = {
  optional: true,
  describe:
    'Agent spec, inline. "name" (1..64 of [A-Za-z0-9._-]) plus exactly one of "model" ({provider, id}, e.g. {"provider":"anthropic","id":"claude-sonnet-4-5"}) or "script" (scripted responses for tests: [] echoes the prompt). Optional: systemPrompt, tools, spawnDepth, maxAgents, maxTokens, maxCostUsd (spend caps of its subtree), env. Give this or specName, not both.',
} as const;
const specName = {
  specName: z
    .string()
    .min(1)
    .optional()
    .describe("Name of a spec saved with swarm_spec_add (see swarm_spec_list). Give this or spec, not both."),
};
const budget = {
  describe:
    "Optional budget override: spawn limits and spend caps. An agent that runs out of a spend cap is paused, with its subtree, until the cap is raised (swarm_set_budget) and it is resumed.",
};
const scopeControl = (route: typeof pauseAgent | typeof resumeAgent, title: string, description: string) =>
  routeTool({ route, title, description, annotations: REPEATABLE, fields: { agentId } });

/** Route tools by name, in the order the bridge lists them. */
export const ROUTE_TOOLS = {
  swarm_create_run: routeTool({
    route: createRun,
    title: "Create a run",
    description:
      "Start a new run: a root agent in its own sandbox, created from an agent spec (inline `spec` or a saved `specName`). Returns runId and rootAgentId at once, with the root provisioning; follow it with swarm_watch_events, swarm_get_run or swarm_get_result on the rootAgentId.",
    annotations: WRITE,
    fields: {
      spec,
      prompt: {
        describe:
          "First task for the root agent, run once its sandbox is ready. Without it the root waits for swarm_prompt_agent.",
      },
      budget,
    },
    extra: specName,
  }),
  swarm_list_runs: routeTool({
    route: listRuns,
    title: "List runs",
    description:
      "Every run the service knows, newest first (at most limit, default 100), each at a glance: runId, rootAgentId, specName (the root's), createdAt, states (how many of its agents are spawning, provisioning, running, paused, done, aborted), agents (in all), live (not yet ended) and usage (its model calls summed: tokens, costUsd, calls). Read one run's tree with swarm_get_run.",
    annotations: READ,
    fields: { limit: { default: 100 } },
  }),
  swarm_get_run: routeTool({
    route: getRun,
    title: "Read a run's tree",
    description:
      "The run's spawn tree: every agent with its parent, depth, state (spawning, provisioning, running, paused, done, aborted; pausedBy operator, cascade or budget; draining true once a drain stop reached it), pendingPermissions (ids of its approval requests waiting for swarm_resolve_permission), outcome (success, failed, aborted, budget-exceeded, lost), usage (its own model calls: tokens, costUsd, calls) and subtreeUsage (it and every descendant); usage at the top sums the whole run. Budgets (caps and what is left) are in swarm_get_agent. asOf is the newest event seq it reflects; pass it as afterSeq to swarm_watch_events to follow from here.",
    annotations: READ,
    fields: { runId },
  }),
  swarm_delete_run: routeTool({
    route: deleteRun,
    title: "Delete a run",
    description:
      "Stop every live agent of the run (each ends with outcome aborted) and close their sandboxes. The run's tree and events stay readable, unless purge is set: then the run is removed for good (events, results, sandbox folders) and no longer exists.",
    annotations: DESTRUCTIVE,
    fields: { runId },
  }),
  swarm_watch_events: routeTool({
    route: streamRunEvents,
    title: "Watch a run's events",
    description:
      "Collect the run's events for a bounded window: those after afterSeq already recorded, then new ones as they happen, until maxEvents, an untilTypes event, the end of the run, or maxWaitSeconds. Returns the events and lastSeq: call again with afterSeq = lastSeq to continue without gaps. Lifecycle events: run_started, agent_spawned, agent_provisioned, agent_state_changed, agent_steered, handle_settled (a result is ready), agent_ended, budget_denied (a spawn refused, or a model call held because the agent or an ancestor ran out of maxTokens or maxCostUsd: its subtree is then paused), budget_changed (new spend caps), model_usage (one model call: provider, model, tokens, costUsd), permission_request (a tool call held for a decision: requestId, tool, args), permission_resolved (requestId, decision, message, by), agent_draining (a drain reached the agent: subtree, deadline; its agent_ended then has reason drained or drain-timeout), agent_unreachable and agent_reachable (the service lost, then found again, the engine of the node the agent's sandbox runs on: node); harness events: agent_start, agent_end, turn_start, turn_end, tool_start, tool_end, ...",
    annotations: READ,
    fields: {
      runId,
      lastEventId: {
        as: "afterSeq",
        default: 0,
        describe:
          "Only events with a seq above this. 0 (default) starts at the beginning of the run; pass the lastSeq of the previous call to continue.",
      },
    },
    // The window: the bridge reads the stream for a bounded time (src/client/collect-events.ts).
    extra: {
      maxWaitSeconds: z
        .number()
        .int()
        .min(0)
        .max(MAX_WAIT_SECONDS)
        .default(20)
        .describe(
          `How long to wait for new events, 0..${MAX_WAIT_SECONDS} s (default 20). Returns earlier when maxEvents is reached, an untilTypes event arrives or every agent of the run has ended. 0 returns only what already happened. If your tool calls time out sooner, use a shorter wait and call again with afterSeq = lastSeq.`,
        ),
      maxEvents: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(100)
        .describe("Most events to return in one call (default 100)."),
      untilTypes: z
        .array(z.string().min(1))
        .optional()
        .describe('Return as soon as an event of one of these types arrives, e.g. ["handle_settled", "agent_ended"].'),
      includeEphemeral: z
        .boolean()
        .default(false)
        .describe(
          "Also return ephemeral events (text deltas, tool output updates). Off by default: they are many and carry no seq.",
        ),
    },
  }),
  swarm_spawn_agent: routeTool({
    route: spawnAgent,
    title: "Spawn a child agent",
    description:
      "Spawn a child under a live agent of the run by forking the parent's sandbox (the child starts with the parent's files). With waitFor the child waits (state spawning) until those agents' results settle. A spawn refused by a budget still succeeds here; the child then ends with outcome budget-exceeded.",
    annotations: WRITE,
    fields: { runId, spec, budget },
    extra: specName,
  }),
  swarm_get_agent: routeTool({
    route: getAgent,
    title: "Read an agent",
    description:
      'One agent\'s view: parent, depth, state (pausedBy "operator", "cascade" or "budget" when paused; draining true once a drain stop reached it), outcome, sandbox, pendingPermissions (its approval requests waiting for swarm_resolve_permission); usage (its own model calls: tokens, costUsd, calls) and subtreeUsage (it and every descendant); budget (maxTokens and maxCostUsd caps, null for none, and remainingTokens and remainingCostUsd it may still spend, ancestors\' caps included); and sessionStats when its harness answers and it is not paused.',
    annotations: READ,
    fields: { agentId },
  }),
  swarm_get_machine: routeTool({
    route: getAgentMachine,
    title: "Read an agent's state machine",
    description: `The agent's state machine as the daemon runs it, to see where an agent is stuck and how it got there: value (the XState state value, e.g. {"live":{"running":"idle"}}), tags of that state (live, running, paused, ...), running (false when the agent ended before the daemon started: then value is null and tags empty) and transitions (at most the latest ${MACHINE_TRANSITIONS_KEPT} since the daemon started, oldest first: at, event, value).`,
    annotations: READ,
    fields: { agentId },
  }),
  swarm_set_budget: routeTool({
    route: setBudget,
    title: "Set an agent's spend budget",
    description:
      'Set new absolute spend caps for an agent and its whole subtree: maxTokens (tokens of every kind), maxCostUsd, or both. Returns its budget: the caps (null for none) and remainingTokens and remainingCostUsd, which ancestors\' caps can lower. Refused (HTTP 409) when a cap would leave the agent more than its parent has left. An agent whose lineage runs out is paused with its subtree (pausedBy "budget" on the agent that ran out); raising the cap does not resume it: call swarm_resume_agent with scope subtree on that agent afterwards.',
    annotations: REPEATABLE,
    fields: {
      agentId,
      maxTokens: {
        withoutNull: true,
        describe:
          "Most tokens (input, output and cache, summed over every model call) the agent and all its descendants may use. The new absolute cap, not an increment.",
      },
      maxCostUsd: {
        withoutNull: true,
        describe:
          "Most US dollars the model calls of the agent and all its descendants may cost. The new absolute cap, not an increment.",
      },
    },
  }),
  swarm_prompt_agent: routeTool({
    route: promptAgent,
    title: "Prompt an agent",
    description:
      "Start a new turn on a live agent with this text. Returns at once; wait for the answer with swarm_get_result (waitSeconds) or swarm_watch_events.",
    annotations: WRITE,
    fields: {
      agentId,
      text: {
        describe:
          "The prompt: starts a new turn on a live agent. Follow it with swarm_get_result or swarm_watch_events.",
      },
    },
  }),
  swarm_steer_agent: routeTool({
    route: steerAgent,
    title: "Steer an agent",
    description:
      'Send guidance to a live agent. delivery tells how it arrived: "steer" (into the running turn), "turn" (the agent was idle, so a new turn started) or "queued" (the agent is paused and gets it on resume).',
    annotations: WRITE,
    fields: { agentId },
  }),
  swarm_pause_agent: scopeControl(
    pauseAgent,
    "Pause",
    "Freeze a live agent's sandbox in place (its running tool is suspended and continues on resume). With scope subtree, parents are frozen before their children and children spawned later join the pause. One result per agent: applied, noop (already paused) or failed with the reason.",
  ),
  swarm_resume_agent: scopeControl(
    resumeAgent,
    "Resume",
    "Thaw a paused agent so it continues where it stopped. With scope subtree, children are resumed before the agent itself. One result per agent.",
  ),
  swarm_stop_agent: routeTool({
    route: stopAgent,
    title: "Stop an agent",
    description:
      'End an agent. Mode "abort" (default): abort its current turn and close its sandbox; it ends with outcome aborted, and with scope subtree leaves are stopped first. Mode "drain": the agents are marked draining (parents first) and this answers at once; each waits for its running turn, then ends as done (agent_ended reason "drained"); aborted at the deadline (drainTimeoutMs, default 10 minutes; reason "drain-timeout"). An agent that had already finished keeps its outcome. One result per agent.',
    annotations: DESTRUCTIVE,
    fields: { agentId },
  }),
  swarm_get_result: routeTool({
    route: getResult,
    title: "Get an agent's result",
    description:
      'The agent\'s result: state "settled" with outcome and result text once a turn finished, or "pending" (result null) if it is still working after waitSeconds. Call again to keep waiting.',
    annotations: READ,
    fields: {
      agentId,
      wait: {
        as: "waitSeconds",
        describe: `How long to wait for a pending result, 0..${MAX_WAIT_SECONDS} s (default 0: answer at once). Returns as soon as it settles. If your tool calls time out sooner, use a shorter wait and call again.`,
      },
    },
  }),
  swarm_fork_agent: routeTool({
    route: forkAgent,
    title: "Fork an agent into tries",
    description: `Fork a live agent that is between turns (its last turn settled: swarm_get_result says settled) into 1..${MAX_FORK_COPIES} children, each starting from the agent's conversation and /work as they are now and given its own first turn: one child per entry of prompts, or count children given the same prompt. Returns agentIds at once, in the order of prompts. The children stay live and idle after their turn (keepAlive, default true) so that they can be compared: wait for them with swarm_wait_agents, read each one's changes with swarm_get_changes, apply the best with swarm_adopt_changes, and end the others with swarm_stop_agent. Refused (HTTP 409) while the agent is in a turn, draining or ended; a child a budget refused is listed too, and ends with outcome budget-exceeded.`,
    annotations: WRITE,
    fields: {
      agentId: {
        describe:
          'The agent to fork, "a_<hex>" (swarm_create_run\'s rootAgentId, swarm_spawn_agent or swarm_get_run): live and between turns.',
      },
      spec: {
        describe:
          "Optional changes to the forked agent's spec for the children; leave it out to copy the agent as it is. name; one of model ({provider, id}) or script (scripted responses for tests), replacing the agent's; approve (rules added to its policy); limits; maxTokens and maxCostUsd.",
      },
      budget,
    },
  }),
  swarm_get_changes: routeTool({
    route: getChanges,
    title: "Read a fork child's changes",
    description:
      "What a fork child (an agentId swarm_fork_agent returned) added, modified or deleted in /work since its fork point: files by path, each with change (added, modified, deleted), kind (file, dir, symlink, other), size and baseSize (bytes now and at the fork; null when absent), linkTarget for a link, and a unified diff of a text file (noDiff says why a file has none: binary, too large, over the answer's budget); diffBytes sums the diffs. Also after the child ended. Refused (HTTP 409) for an agent not made by a fork. Apply them to the parent with swarm_adopt_changes.",
    annotations: READ,
    fields: {
      agentId: { describe: 'The fork child, "a_<hex>", as returned by swarm_fork_agent (agentIds).' },
    },
  }),
  swarm_adopt_changes: routeTool({
    route: adoptChanges,
    title: "Adopt a fork child's changes",
    description:
      'Apply what a fork child changed in /work since its fork point (see swarm_get_changes) onto its parent\'s /work. agentId is the parent (the agent swarm_fork_agent forked), from the child, live or ended. The parent must be live and between turns. onConflict "fail" (default): when a path was changed both by the child and by the parent since the fork, nothing is applied and the call is refused with HTTP 409 naming the paths; "theirs": the child\'s version wins. Returns files (what was applied, by path) and skipped (what cannot be applied, with why). Then prompt the parent (swarm_prompt_agent) to go on from the adopted files, and stop the children you no longer need (swarm_stop_agent).',
    annotations: WRITE,
    fields: {
      agentId: { describe: 'The parent that takes the changes, "a_<hex>": the agent that was forked.' },
      from: {
        describe: 'The fork child whose changes are applied, "a_<hex>", one of the agentIds of swarm_fork_agent.',
      },
    },
  }),
  swarm_wait_agents: routeTool({
    route: waitForAgents,
    title: "Wait for several agents",
    description:
      'Wait in one call for several agents of a run, e.g. the agentIds of swarm_fork_agent. mode "all" (default): until every one settled; "first": until one settles with outcome success, the winner. results has each agent\'s result as swarm_get_result gives it (state settled with outcome and result text, or pending when timeoutMs passed first): "all" every agent in the order asked, "first" the winner alone, or every agent when none succeeded. stopOthers: once it answers, stop every listed agent still live but the winner (the losers of a race). Call again to keep waiting for pending ones.',
    annotations: WRITE,
    fields: {
      runId,
      agentIds: {
        describe: `Agent ids of this run, "a_<hex>" (1..${MAX_WAIT_AGENTS}): the agentIds of swarm_fork_agent, or any from swarm_get_run.`,
      },
      timeoutMs: {
        describe: `How long to wait, 1..${MAX_WAIT_MANY_MS} ms (default 240000). Returns as soon as the mode is satisfied. If your tool calls time out sooner, use a shorter wait and call again.`,
      },
    },
  }),
  swarm_list_permissions: routeTool({
    route: listPermissions,
    title: "List approval requests",
    description:
      'The run\'s approval requests, oldest first: tool calls an agent\'s spec holds for a decision (its "approve" rules: "*" or {tool, match}). Each has requestId, agentId, tool, args (the call\'s arguments), at, expiresAt (when approveTimeoutMs denies it; null: never) and state; resolved ones also decision (allow or deny), by (operator, stop, run-deleted or timeout), message and resolvedAt. The asking agent waits in its turn until swarm_resolve_permission answers. Follow new ones with swarm_watch_events (untilTypes ["permission_request"]).',
    annotations: READ,
    fields: { runId },
  }),
  swarm_resolve_permission: routeTool({
    route: resolvePermission,
    title: "Allow or deny a tool call",
    description:
      'Answer a pending approval request of an agent: "allow" runs the held tool call, "deny" makes it fail with message as its error, and the agent\'s turn goes on either way. Returns the request as resolved. Refused with HTTP 404 for an unknown request (or one of another agent) and 409 when it was already resolved (by the operator, a stop of the agent, a deleted run or its timeout).',
    annotations: WRITE,
    fields: {
      agentId: { describe: "The agent that asked: the agentId of the request in swarm_list_permissions." },
      requestId: { describe: 'Approval request id, "p_<hex>", as returned by swarm_list_permissions.' },
    },
  }),
  swarm_list_models: routeTool({
    route: listModels,
    title: "List models",
    description:
      'The models an agent spec may name as "model": {provider, id}, by provider then id, each with its name, api, contextWindow, maxTokens (most output tokens), cost (US dollars per million input, output, cacheRead and cacheWrite tokens) and key: where the service would take the provider\'s key from ("env", "file", "command") or "none" (a call would fail for want of a key). The key itself is never shown. Give provider to narrow the list (there are hundreds), available true for only the models that have a key.',
    annotations: READ,
    fields: {
      available: { describe: 'true: only models whose key the service finds (key not "none"). Default false: all.' },
    },
  }),
  swarm_list_nodes: routeTool({
    route: listNodes,
    title: "List nodes",
    description:
      "The machines the service's sandboxes run on: each node's id (what an agent's \"node\" in swarm_get_run names), hostname, state (ready, down, unknown, disconnected), availability (active, pause, drain), engine (reachable or unreachable, with a reason), sandboxes (the service's live ones there), cpus and memoryMiB (its capacity) and reservedCpus and reservedMemoryMiB (what those sandboxes' limits reserve). One node, \"local\", unless the service runs a cluster. An agent whose view says unreachable: true is on a node the service cannot reach now.",
    annotations: READ,
    fields: {},
  }),
};

export type RouteToolName = keyof typeof ROUTE_TOOLS;
