import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AnswerOf } from "../api/operation.ts";
import type { RouteTool, ToolInput } from "../api/route-tool.ts";
import type { ROUTE_TOOLS, RouteToolName } from "../api/tools.ts";
import { collectEvents } from "../client/collect-events.ts";
import type { SpecStore } from "../client/spec-store.ts";
import type { CallOptions, SwarmClient } from "../client/swarm-client.ts";
import type { AgentSpec } from "../spec/agent-spec.ts";
import { type ControlResponse, isLive, type PermissionView } from "../swarm-api.ts";
import type { ToolExtra } from "./progress.ts";
import { reportProgress } from "./progress.ts";
import { budgetText, usageText } from "./spend-text.ts";
import { ToolInputError, toolOk } from "./tool-result.ts";

export interface ToolDeps {
  client: SwarmClient;
  /** Saved specs a tool may name (`specName`): the stdio bridge's, on its machine; none at the daemon's `/mcp`. */
  specs?: SpecStore;
}

/** What a tool's answer is made with: its route, called as the table says, and the bridge's own state. */
export interface ToolContext<T extends RouteTool> extends ToolDeps {
  /** Calls the tool's route with a (parsed) input: its fields go where the route takes them. */
  call(input: ToolInput<T>, options?: CallOptions): Promise<AnswerOf<T["route"]>>;
  extra: ToolExtra;
}

/** Turns a tool's input into its answer: the summary line the model reads first, and the data. */
export type ToolAnswer<T extends RouteTool> = (input: ToolInput<T>, context: ToolContext<T>) => Promise<CallToolResult>;

/**
 * How each route tool words its answer: a one-line summary for the model, and the data. The call
 * itself is the table's (`call` sends the input to the tool's route); a tool only adds what the
 * route cannot do: a saved spec by name, an event window, progress during a long wait.
 */
export const ANSWERS: { [K in RouteToolName]: ToolAnswer<(typeof ROUTE_TOOLS)[K]> } = {
  async swarm_create_run(input, { call, specs }) {
    const created = await call({ ...input, spec: resolveSpec(input, specs) });
    return toolOk(`Run ${created.runId} created; root agent ${created.rootAgentId} is ${created.state}.`, {
      ...created,
    });
  },

  async swarm_list_runs(input, { call }) {
    const { runs } = await call(input);
    const list = runs.map((r) => `${r.runId} (${r.specName}, ${r.live} of ${r.agents} agent(s) live)`).join(", ");
    return toolOk(`${runs.length} run(s), newest first${list ? `: ${list}` : ""}.`, { runs });
  },

  async swarm_get_run(input, { call }) {
    const run = await call(input);
    const live = run.agents.filter((a) => isLive(a.state)).length;
    return toolOk(
      `Run ${run.runId}: ${run.agents.length} agent(s), ${live} live, ${usageText(run.usage)}, as of event ${run.asOf}.`,
      { ...run },
    );
  },

  async swarm_delete_run(input, { call }) {
    const { runId, purge } = input;
    await call(input);
    if (purge)
      return toolOk(
        `Run ${runId} purged: its live agents were aborted, then its events, results and sandboxes were removed.`,
        { runId, deleted: true, purged: true },
      );
    return toolOk(`Run ${runId} deleted: its live agents were aborted; its events are kept.`, { runId, deleted: true });
  },

  // A window over the stream, not one request: collectEvents reads the snapshot and the stream.
  async swarm_watch_events({ runId, ...window }, { client, extra }) {
    const stop = reportProgress(extra, window.maxWaitSeconds, `watching ${runId}`);
    try {
      const got = await collectEvents(client, runId, { ...window, signal: extra.signal });
      const summary = `${got.events.length} event(s) of ${runId}; lastSeq ${got.lastSeq}; stopped by ${got.stoppedBy}${got.runOver ? "; the run is over (every agent ended)" : ""}.`;
      return toolOk(summary, { ...got });
    } finally {
      stop();
    }
  },

  async swarm_spawn_agent(input, { call, specs }) {
    const spawned = await call({ ...input, spec: resolveSpec(input, specs) });
    return toolOk(`Agent ${spawned.agentId} spawned under ${input.parentAgentId}; it is ${spawned.state}.`, {
      runId: input.runId,
      ...spawned,
    });
  },

  async swarm_get_agent(input, { call }) {
    const agent = await call(input);
    const paused = agent.pausedBy ? ` (paused by ${agent.pausedBy})` : "";
    const refused = agent.toolErrors > 0 ? `; swarmd refused ${agent.toolErrors} of its tool call(s)` : "";
    return toolOk(
      `Agent ${agent.agentId} (${agent.specName}) is ${agent.state}${paused}${agent.outcome ? `, outcome ${agent.outcome}` : ""}${refused}; its subtree spent ${usageText(agent.subtreeUsage)}.`,
      { ...agent },
    );
  },

  async swarm_get_machine(input, { call }) {
    const machine = await call(input);
    const state = machine.running
      ? `is in ${JSON.stringify(machine.value)} (tags: ${machine.tags.join(", ") || "none"})`
      : "is not running (the agent ended before the daemon started)";
    return toolOk(`The machine of ${machine.agentId} ${state}; ${machine.transitions.length} transition(s) recorded.`, {
      ...machine,
    });
  },

  async swarm_set_budget(input, { call }) {
    const answer = await call(input);
    return toolOk(`Budget of ${answer.agentId} set: ${budgetText(answer.budget)}.`, { ...answer });
  },

  async swarm_prompt_agent(input, { call }) {
    await call(input);
    return toolOk(`Prompt accepted by ${input.agentId}; a new turn is starting.`, {
      agentId: input.agentId,
      accepted: true,
    });
  },

  async swarm_steer_agent(input, { call }) {
    const steered = await call(input);
    return toolOk(`Steer message delivered to ${input.agentId} as "${steered.delivery}".`, {
      agentId: input.agentId,
      ...steered,
    });
  },

  swarm_pause_agent: control("Pause"),
  swarm_resume_agent: control("Resume"),

  async swarm_stop_agent(input, { call }) {
    const { agentId, scope, mode } = input;
    const answer = await call(input);
    const what = mode === "drain" ? "Drain" : "Stop";
    return toolOk(`${what} ${agentId}${scope === "subtree" ? " and its subtree" : ""}: ${membersLine(answer)}.`, {
      agentId,
      scope,
      mode,
      ...answer,
    });
  },

  async swarm_get_result(input, { call, extra }) {
    const { agentId, waitSeconds } = input;
    const stop = reportProgress(extra, waitSeconds, `waiting for the result of ${agentId}`);
    try {
      const result = await call(input, { signal: extra.signal });
      const summary =
        result.state === "settled"
          ? `Result of ${agentId} is settled with outcome ${result.outcome}.`
          : `Result of ${agentId} is still pending after ${waitSeconds} s; call again to keep waiting.`;
      return toolOk(summary, { ...result });
    } finally {
      stop();
    }
  },

  async swarm_fork_agent(input, { call }) {
    const { agentIds } = await call(input);
    const kept = input.keepAlive ? "; each stays live after its turn" : "";
    return toolOk(
      `Forked ${input.agentId} into ${agentIds.length} child(ren): ${agentIds.join(", ")}${kept}. Wait for them with swarm_wait_agents, compare them with swarm_get_changes.`,
      { agentId: input.agentId, agentIds },
    );
  },

  async swarm_get_changes(input, { call }) {
    const changes = await call(input);
    const { forkedFrom, files } = changes;
    const since = `since its fork from ${forkedFrom.agentId} (turn ${forkedFrom.forkPoint.turn})`;
    const summary =
      files.length === 0
        ? `${changes.agentId} changed nothing in /work ${since}.`
        : `${changes.agentId} changed ${files.length} path(s) in /work ${since}: ${countsLine(files)}; ${changes.diffBytes} bytes of diff.`;
    return toolOk(summary, { ...changes });
  },

  async swarm_adopt_changes(input, { call }) {
    const adopted = await call(input);
    const skipped = adopted.skipped.length > 0 ? `; ${adopted.skipped.length} skipped (see skipped)` : "";
    const summary =
      adopted.files.length === 0
        ? `Nothing to adopt: ${adopted.from} changed nothing that ${adopted.agentId}'s /work does not already hold${skipped}.`
        : `${adopted.agentId} adopted ${adopted.files.length} change(s) of ${adopted.from}: ${countsLine(adopted.files)}${skipped}.`;
    return toolOk(summary, { ...adopted });
  },

  async swarm_wait_agents(input, { call, extra }) {
    const { runId, agentIds, mode, stopOthers, timeoutMs } = input;
    const stop = reportProgress(
      extra,
      Math.ceil(timeoutMs / 1000),
      `waiting for ${agentIds.length} agent(s) of ${runId}`,
    );
    try {
      const answer = await call(input, { signal: extra.signal });
      const pending = answer.results.filter((r) => r.state === "pending").length;
      const stopped = stopOthers ? "; the other listed agents still live were stopped" : "";
      let summary: string;
      if (answer.winner !== null)
        summary = `Winner ${answer.winner}: the first to settle with outcome success${stopped}.`;
      else {
        const settled = answer.results.filter((r) => r.state === "settled");
        const outcomes = countsOf(settled.map((r) => r.outcome ?? "none"));
        const head =
          mode === "first"
            ? `No winner: none of ${agentIds.length} agent(s) succeeded`
            : `${answer.results.length} agent(s)`;
        const tail = pending > 0 ? `; ${pending} still pending after ${timeoutMs} ms: call again to keep waiting` : "";
        summary = `${head}; ${settled.length} settled${outcomes ? ` (${outcomes})` : ""}${tail}${stopped}.`;
      }
      return toolOk(summary, { runId, ...answer });
    } finally {
      stop();
    }
  },

  async swarm_list_permissions(input, { call }) {
    const { runId, state } = input;
    const { permissions } = await call(input);
    const which = state === "all" ? "" : `${state} `;
    const list = permissions.map((p) => `${p.requestId} (${p.agentId} ${p.tool})`).join(", ");
    return toolOk(`${permissions.length} ${which}approval request(s) in ${runId}${list ? `: ${list}` : ""}.`, {
      runId,
      state,
      permissions,
    });
  },

  async swarm_resolve_permission(input, { call }) {
    const resolved = await call(input);
    return toolOk(
      `${verdict(resolved)} ${resolved.tool} call of ${resolved.agentId} (request ${resolved.requestId}).`,
      { ...resolved },
    );
  },

  async swarm_list_models(input, { call }) {
    const { models } = await call(input);
    const keyed = models.filter((m) => m.key !== "none").length;
    const which = input.provider ? ` of ${input.provider}` : "";
    return toolOk(
      `${models.length} model(s)${which} a spec may name, ${keyed} with a key; name one in a spec as "model": {"provider", "id"}.`,
      { models },
    );
  },

  async swarm_list_nodes(input, { call }) {
    const { nodes } = await call(input);
    const list = nodes
      .map(
        (n) =>
          `${n.id} (${n.state}, ${n.availability}, engine ${n.engine}${n.reason ? `: ${n.reason}` : ""}, ${n.sandboxes} sandbox(es))`,
      )
      .join(", ");
    return toolOk(`${nodes.length} node(s)${list ? `: ${list}` : ""}.`, { nodes });
  },
};

/** Pause and resume: "Pause a_1 and its subtree: 2 applied". */
function control(title: string): ToolAnswer<(typeof ROUTE_TOOLS)["swarm_pause_agent" | "swarm_resume_agent"]> {
  return async (input, { call }) => {
    const { agentId, scope } = input;
    const answer = await call(input);
    return toolOk(`${title} ${agentId}${scope === "subtree" ? " and its subtree" : ""}: ${membersLine(answer)}.`, {
      agentId,
      scope,
      ...answer,
    });
  };
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

/** "2 added, 1 modified": the changes counted, added then modified then deleted. */
function countsLine(files: readonly { change: "added" | "modified" | "deleted" }[]): string {
  const order = ["added", "modified", "deleted"];
  return countsOf(files.map((f) => f.change).sort((a, b) => order.indexOf(a) - order.indexOf(b)));
}

function countsOf(words: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
  return [...counts].map(([word, n]) => `${n} ${word}`).join(", ");
}

function verdict(p: PermissionView): string {
  return p.decision === "deny" ? `Denied${p.message ? ` ("${p.message}")` : ""}:` : "Allowed:";
}

/** Exactly one of an inline spec or a saved one's name (only where specs are saved: not at `/mcp`). */
function resolveSpec(input: { spec?: AgentSpec; specName?: string }, specs: SpecStore | undefined): AgentSpec {
  if (input.spec && input.specName) throw new ToolInputError("Give either spec or specName, not both.");
  if (input.spec) return input.spec;
  if (specs === undefined) throw new ToolInputError("An agent spec is required: pass spec (inline).");
  if (input.specName) return specs.get(input.specName);
  throw new ToolInputError(
    "An agent spec is required: pass spec (inline) or specName (a spec saved with swarm_spec_add; see swarm_spec_list).",
  );
}
