import { grantedSpec } from "../../src/spec/grants.ts";
import type { ProvisionPlan } from "../effects/sandbox.actors.ts";
import type { AgentTable } from "./agent-table.ts";

/** What planning a sandbox needs of the run. */
export interface ProvisionPlanDeps {
  runId: string;
  table: Pick<AgentTable, "require">;
  /** Resolves once the agent's sandbox exists (its machine is live); rejects when it ends first. */
  whenLive(agentId: string, signal: AbortSignal): Promise<void>;
  /** The settled result of an agent, if it has one. */
  resultOf(agentId: string): string | null;
  /** How the agent ended, if it did. */
  outcomeOf(agentId: string): string | null;
}

/**
 * How to make an agent's sandbox: forked from its parent's once that exists (an event, not a
 * poll), from its fork point for a fork child, or fresh for the root; with `/inputs/<id>.md` for
 * every agent of its `waitFor`.
 */
export async function planProvision(
  deps: ProvisionPlanDeps,
  agentId: string,
  signal: AbortSignal,
): Promise<ProvisionPlan> {
  const { meta, parentAgentId, waitFor } = deps.table.require(agentId);
  let parentSandboxId: string | null = null;
  if (parentAgentId !== null) {
    // A fork child starts from its fork point, which outlives its parent's sandbox: no wait for that.
    if (!meta.fork) await deps.whenLive(parentAgentId, signal);
    parentSandboxId = deps.table.require(parentAgentId).meta.sandboxId;
  }
  const fork = meta.fork;
  const inputs: Record<string, string> = {};
  for (const dep of waitFor) {
    inputs[`${dep}.md`] =
      deps.resultOf(dep) ?? `(no result: agent ${dep} ended with outcome ${deps.outcomeOf(dep) ?? "unknown"})\n`;
  }
  return {
    request: {
      sandboxId: meta.sandboxId,
      runId: deps.runId,
      agentId,
      // The harness gates calls on the whole policy (its ancestors' rules too), not the spec's own.
      spec: { ...grantedSpec(meta.spec, meta.grants), approve: meta.approve ?? [] },
      env: meta.grants.env,
      network: meta.grants.network,
      image: meta.grants.image,
      limits: meta.grants.limits,
      ...(fork
        ? {
            fork: {
              baseId: fork.baseId,
              copy: fork.copy,
              of: fork.of,
              ...(fork.toolCallId !== undefined ? { toolCallId: fork.toolCallId } : {}),
            },
          }
        : {}),
    },
    parentSandboxId,
    inputs,
  };
}
