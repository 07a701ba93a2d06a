import { SwarmError } from "../errors.ts";
import type { SandboxLimits } from "../sandbox/runtime.ts";
import type { AgentSpec, SpecLimits } from "./agent-spec.ts";
import { TOOL_NAMES } from "./tool-names.ts";

type ToolName = (typeof TOOL_NAMES)[number];

/**
 * What an agent's sandbox is given: the spec's asks, resolved against what the agent above it
 * has. A child never gets more than its parent, so no agent can grow its privileges by spawning.
 */
export interface Grants {
  network: boolean;
  /** Docker image; `undefined` is the runtime's default. */
  image?: string;
  tools: ToolName[];
  env: Record<string, string>;
  limits: SandboxLimits;
}

/** The spec's own limits named in `SandboxLimits` terms (`tmpMiB` is the daemon's, never a spec's). */
const SPEC_LIMITS = ["pids", "memoryMiB", "cpus", "diskMiB"] as const satisfies readonly (keyof SpecLimits &
  keyof SandboxLimits)[];

const refuse = (field: string, problem: string) => new SwarmError("INVALID_BODY", `${field}: ${problem}`);

/**
 * A run's root: the operator's spec, within the daemon's ceiling (`SWARM_LIMIT_*`). `root` names
 * the spec in errors (`body.spec`).
 */
export function rootGrants(spec: AgentSpec, ceiling: SandboxLimits, root: string): Grants {
  return {
    network: spec.network ?? false,
    image: spec.image,
    tools: [...(spec.tools ?? TOOL_NAMES)],
    env: { ...(spec.env ?? {}) },
    limits: tightenLimits(ceiling, spec.limits, `${root}.limits`, "the daemon's limit (SWARM_LIMIT_*)"),
  };
}

/**
 * A child's grants: what its spec asks for, each at most its parent's. A field the spec leaves out
 * is the parent's. Throws `INVALID_BODY` naming the first field that asks for more.
 */
export function childGrants(parent: Grants, spec: AgentSpec, root: string): Grants {
  if (spec.network === true && !parent.network)
    throw refuse(`${root}.network`, "the parent agent has no network, so its children cannot have one");
  if (spec.image !== undefined && spec.image !== parent.image) {
    throw refuse(
      `${root}.image`,
      `a child runs in its parent's image (${parent.image ?? "the default image"}), not another`,
    );
  }
  const extraTool = spec.tools?.find((tool) => !parent.tools.includes(tool));
  if (extraTool !== undefined)
    throw refuse(
      `${root}.tools`,
      `${extraTool} is not among the parent agent's tools (${parent.tools.join(", ") || "none"})`,
    );
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (parent.env[name] !== value)
      throw refuse(
        `${root}.env.${name}`,
        "a child's env may only repeat variables of its parent's env, with the same value",
      );
  }
  return {
    network: spec.network ?? parent.network,
    image: parent.image,
    tools: spec.tools ? [...spec.tools] : [...parent.tools],
    env: spec.env ? { ...spec.env } : { ...parent.env },
    limits: tightenLimits(parent.limits, spec.limits, `${root}.limits`, "the parent agent's limit"),
  };
}

/** `ceiling` with each limit the spec names, refusing any above the ceiling. */
function tightenLimits(
  ceiling: SandboxLimits,
  asked: SpecLimits | undefined,
  field: string,
  whose: string,
): SandboxLimits {
  const limits = { ...ceiling };
  for (const name of SPEC_LIMITS) {
    const value = asked?.[name];
    if (value === undefined) continue;
    if (value > ceiling[name]) throw refuse(`${field}.${name}`, `${value} is above ${whose} of ${ceiling[name]}`);
    limits[name] = value;
  }
  // /tmp is a tmpfs, counted in the sandbox's memory: never larger than the memory itself.
  limits.tmpMiB = Math.min(ceiling.tmpMiB, limits.memoryMiB);
  return limits;
}

/** The spec a sandbox's harness reads: the agent's spec with what it was granted in place of what it asked. */
export function grantedSpec(spec: AgentSpec, grants: Grants): AgentSpec {
  const { env: _env, ...rest } = spec;
  const limits = Object.fromEntries(SPEC_LIMITS.map((name) => [name, grants.limits[name]]));
  return {
    ...rest,
    tools: grants.tools,
    network: grants.network,
    limits,
    ...(grants.image ? { image: grants.image } : {}),
  };
}
