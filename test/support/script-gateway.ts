import { ModelGateway } from "../../src/gateway/gateway.ts";
import type { GatewayModel } from "../../src/gateway/gateway-model.ts";
import type { CallUsage, ModelCaller, ScriptCursor } from "../../src/gateway/model-caller.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";

/** A scripted agent with no daemon around it: no budgets, never paused, its place in the script in memory. */
export function scriptCaller(script: readonly ScriptStep[], usage: CallUsage[] = []): ModelCaller {
  return standaloneCaller(SCRIPTED_MODEL, usage, script);
}

/** An agent of `model` with no daemon around it; its calls' usage is collected in `usage`, the gateway's refusals in `refusals`. */
export function standaloneCaller(
  model: GatewayModel,
  usage: CallUsage[] = [],
  script?: readonly ScriptStep[],
  refusals: string[] = [],
): ModelCaller {
  let next = 0;
  const cursor: ScriptCursor = { take: async () => next++, delivered: async () => undefined };
  return {
    agentId: "fixture",
    model,
    script,
    cursor,
    admit: async () => undefined,
    holding: () => undefined,
    record: async (call) => void usage.push(call),
    refused: (message) => void refusals.push(message),
    whenRunning: async () => undefined,
  };
}

/**
 * What the daemon does around a runtime for tests that drive a runtime without it: each sandbox's
 * model gateway served (answering its spec's script) before its harness starts, and closed with it.
 * Runtimes wrapped by one of these share its gateway (a reopened runtime finds the sockets served).
 */
export function scriptGateway() {
  const gateway = new ModelGateway(loadModelCatalog());
  const specs = new Map<string, { script?: ScriptStep[] }>();
  const served = new Set<string>();
  const wrap = <R extends SandboxRuntime>(runtime: R): R => ({
    ...runtime,
    provision(req, signal) {
      specs.set(req.sandboxId, req.spec as { script?: ScriptStep[] });
      return runtime.provision(req, signal);
    },
    fork(parent, req, signal) {
      specs.set(req.sandboxId, req.spec as { script?: ScriptStep[] });
      return runtime.fork(parent, req, signal);
    },
    async startHarness(sandboxId, signal) {
      if (!served.has(sandboxId)) {
        await gateway.open(runtime.controlDir(sandboxId), scriptCaller(specs.get(sandboxId)?.script ?? []));
        served.add(sandboxId);
      }
      return runtime.startHarness(sandboxId, signal);
    },
    async close(sandboxId, signal) {
      await runtime.close(sandboxId, signal);
      if (served.delete(sandboxId)) await gateway.close(runtime.controlDir(sandboxId));
    },
  });
  /** Serve a sandbox started elsewhere (by an earlier process), as a restarted daemon does. */
  const serve = async (controlDir: string, script: readonly ScriptStep[]) =>
    gateway.open(controlDir, scriptCaller(script));
  return { wrap, serve, close: () => gateway.closeAll() };
}
