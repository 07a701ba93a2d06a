import { grantedSpec } from "../../src/spec/grants.ts";
import type { ProvisionPlan } from "../effects/sandbox.actors.ts";
import type { Run } from "./run.ts";

/**
 * How to make an agent's sandbox: forked from its parent's once that exists (an event, not a
 * poll), or fresh for the root; with `/inputs/<id>.md` for every agent of its `waitFor`.
 */
export async function planProvision(run: Run, agentId: string, signal: AbortSignal): Promise<ProvisionPlan> {
  const { meta, parentAgentId, waitFor } = run.agents.require(agentId);
  const parentSandboxId = parentAgentId === null ? null : await run.agents.whenSandboxReady(parentAgentId, signal);
  const inputs: Record<string, string> = {};
  for (const dep of waitFor) {
    const outcome = run.view.agents.get(dep)?.outcome ?? "unknown";
    inputs[`${dep}.md`] = run.deps.results.read(dep) ?? `(no result: agent ${dep} ended with outcome ${outcome})\n`;
  }
  return {
    request: {
      sandboxId: meta.sandboxId,
      runId: run.runId,
      agentId,
      // The harness gates calls on the whole policy (its ancestors' rules too), not the spec's own.
      spec: { ...grantedSpec(meta.spec, meta.grants), approve: meta.approve ?? [] },
      env: meta.grants.env,
      network: meta.grants.network,
      image: meta.grants.image,
      limits: meta.grants.limits,
    },
    parentSandboxId,
    inputs,
  };
}
