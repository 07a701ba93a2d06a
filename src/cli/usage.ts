import { DEFAULT_WAIT_MANY_MS, MAX_WAIT_MANY_MS } from "../api/limits.ts";
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_RUN_LIST_LIMIT, MAX_FORK_COPIES, MAX_RUN_LIST_LIMIT } from "../swarm-api.ts";

/** `swarm --help`, and the line shown under a usage error of each command. */
export const USAGE = `swarm: operate swarmd (runs of sandboxed AI coding agents) at SWARM_URL

Usage:
  swarm run <spec.json | saved-spec | -> [--prompt TEXT] [--keep-alive] [--spawn-depth N] [--max-agents N]
            [--max-tokens N] [--max-cost-usd X]
  swarm spawn <parentAgentId> <spec.json | saved-spec | -> [--prompt TEXT] [--wait-for AGENT]...
            [--keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N] [--max-cost-usd X]
            [--idempotency-key KEY] [--run RUN]
                                           a child forked from a live parent's sandbox; --wait-for
                                           (repeatable): fork once those agents' results settled
  swarm fork <agentId> (--prompt TEXT... | --count N --prompt TEXT) [--spec CHANGES.json | -]
            [--name NAME] [--no-keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N]
            [--max-cost-usd X]
                                           children of an agent between turns, each from its
                                           conversation and /work now: one per --prompt, or N
                                           given the same one (1..${MAX_FORK_COPIES}); kept live after their turn
  swarm changes <agentId> [--diff]         what a fork child changed in /work since its fork:
                                           path, change, kind, sizes; --diff: the unified diffs
  swarm adopt <agentId> --from <childId> [--theirs]
                                           apply a fork child's changes to its parent's /work;
                                           --theirs: the child's version where both changed a path
  swarm wait <runId> <agentId>... [--first] [--stop-others] [--timeout MS]
                                           wait for several agents: all settled, or --first the
                                           first success; --stop-others stops the rest (MS 1..${MAX_WAIT_MANY_MS},
                                           default ${DEFAULT_WAIT_MANY_MS})
  swarm models [FILTER] [--provider NAME] [--available]
                                           the models a spec may name, and where each key would
                                           come from (env, file, command, none; never the key)
  swarm nodes                              the machines sandboxes run on: state, availability,
                                           engine, live sandboxes, CPUs and memory reserved of all
  swarm runs [--limit N]                   every run, newest first: root spec, age, live/all agents,
                                           agents per state, spend (N 1..${MAX_RUN_LIST_LIMIT}, default ${DEFAULT_RUN_LIST_LIMIT})
  swarm tree <runId> [--once]              the spawn tree, redrawn live until the run ends
                                           (tokens and cost per agent count its whole subtree)
  swarm machine <agentId>                  the agent's state machine: state, tags, latest transitions
  swarm events <runId> [--after SEQ] [--follow] [--ephemeral]
  swarm prompt <agentId> <text...>         a new turn (after the one under way; on resume when paused)
  swarm pause|resume <agentId> [--subtree]
  swarm stop <agentId> [--subtree] [--mode abort|drain] [--drain-timeout MS]
                                           drain: no new work; each ends once its turn settles,
                                           aborted after MS milliseconds (default ${DEFAULT_DRAIN_TIMEOUT_MS})
  swarm steer <agentId> <message...> [--subtree]
  swarm delete <runId> [--purge]           stop every live agent of the run; --purge: remove it for good
  swarm result <agentId> [--wait SECONDS]  (0..240)
  swarm budget <agentId> [--max-tokens N] [--max-cost-usd X]
                                           set the subtree's spend caps (none given: show them);
                                           resumes nothing: follow with swarm resume --subtree
  swarm approvals <runId> [--state pending|resolved|all]
                                           tool calls held by an approve policy (default pending)
  swarm allow <agentId> <requestId>
  swarm deny <agentId> <requestId> [--message TEXT]
                                           the message is what the agent is told as the tool's error
  swarm specs add <spec.json> [--name NAME] [--no-overwrite]
  swarm specs list
  swarm specs rm <name>
  swarm mcp                                the tool bridge for AI chat clients, on stdio

Every command takes --json (machine-readable output; events print one JSON object per line),
--url URL (instead of SWARM_URL) and --help.

Environment: SWARM_URL (default http://127.0.0.1:4600), SWARM_TOKEN (sent as a Bearer token),
SWARM_SPECS_DIR (saved specs; default $XDG_CONFIG_HOME/swarmd/specs or ~/.config/swarmd/specs).

Controls say what happened in words (a_… paused, a_… already paused, stopped 5 agents);
docs/controls.md has what each control does in each state.

Exit codes: 0 ok, or already so (already paused, already ended, not paused: nothing to resume;
result settled), 1 the service refused (not live, draining, not found, in a turn, an adopt's
conflict, a spawn budget), a control failed on some agent or wait --first saw no success, 2 usage or
local input error, 3 service unreachable, 4 result (or wait) still pending, 130 interrupted.
`;

export const COMMAND_USAGE: Record<string, string> = {
  run: "swarm run <spec.json | saved-spec | -> [--prompt TEXT] [--keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N] [--max-cost-usd X] [--json]",
  spawn:
    "swarm spawn <parentAgentId> <spec.json | saved-spec | -> [--prompt TEXT] [--wait-for AGENT]... [--keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N] [--max-cost-usd X] [--idempotency-key KEY] [--run RUN] [--json]",
  fork: "swarm fork <agentId> (--prompt TEXT... | --count N --prompt TEXT) [--spec CHANGES.json | -] [--name NAME] [--no-keep-alive] [--spawn-depth N] [--max-agents N] [--max-tokens N] [--max-cost-usd X] [--json]",
  changes: "swarm changes <agentId> [--diff] [--json]",
  adopt: "swarm adopt <agentId> --from <childId> [--theirs] [--json]",
  wait: "swarm wait <runId> <agentId>... [--first] [--stop-others] [--timeout MS] [--json]",
  models: "swarm models [FILTER] [--provider NAME] [--available] [--json]",
  nodes: "swarm nodes [--json]",
  prompt: "swarm prompt <agentId> <text...> [--json]",
  delete: "swarm delete <runId> [--purge] [--json]",
  runs: "swarm runs [--limit N] [--json]",
  tree: "swarm tree <runId> [--once] [--json]",
  machine: "swarm machine <agentId> [--json]",
  events: "swarm events <runId> [--after SEQ] [--follow] [--ephemeral] [--json]",
  pause: "swarm pause <agentId> [--subtree] [--json]",
  resume: "swarm resume <agentId> [--subtree] [--json]",
  stop: "swarm stop <agentId> [--subtree] [--mode abort|drain] [--drain-timeout MS] [--json]",
  steer: "swarm steer <agentId> <message...> [--subtree] [--json]",
  result: "swarm result <agentId> [--wait SECONDS] [--json]",
  budget: "swarm budget <agentId> [--max-tokens N] [--max-cost-usd X] [--json]",
  approvals: "swarm approvals <runId> [--state pending|resolved|all] [--json]",
  allow: "swarm allow <agentId> <requestId> [--json]",
  deny: "swarm deny <agentId> <requestId> [--message TEXT] [--json]",
  specs:
    "swarm specs add <spec.json> [--name NAME] [--no-overwrite] | swarm specs list [--json] | swarm specs rm <name>",
  mcp: "swarm mcp [--url URL]   (stdio MCP server; configure with SWARM_URL, SWARM_TOKEN, SWARM_SPECS_DIR; also the swarmd-mcp bin)",
};
