import { randomUUID } from "node:crypto";
import type { ProvisionRequest, SandboxRuntime } from "../src/sandbox/runtime.ts";
import type { DockerCli } from "./docker-cli.ts";
import { timed } from "./stats.ts";

/** The operations the sandbox benchmark times, in table order. */
export const OPS = ["provision", "fork", "freeze", "thaw", "close", "closeFork"] as const;
export type Op = (typeof OPS)[number];
export type RepTimings = Record<Op, number>;

/** Something whose sandbox operations are timed: a runtime, or the raw docker CLI. */
export interface Subject {
  name: string;
  /** One repetition: provision a parent, fork it, freeze and thaw the parent, close both. */
  rep(): Promise<RepTimings>;
  /** Remove whatever a failed repetition left behind. */
  cleanUp(): Promise<void>;
}

const CALL_TIMEOUT_MS = 120_000;
const signal = () => AbortSignal.timeout(CALL_TIMEOUT_MS);

const request = (name: string): ProvisionRequest => ({
  sandboxId: randomUUID(),
  runId: "r_bench",
  agentId: `a_${name}`,
  spec: { name, script: [] },
});

/**
 * A runtime through its port. With `startHarness` the parent's harness runs (untimed) before it is
 * forked, frozen and closed: the process runtime freezes nothing in a sandbox without processes.
 */
export function runtimeSubject(name: string, runtime: SandboxRuntime, options: { startHarness: boolean }): Subject {
  return {
    name,
    async rep() {
      const parent = request("parent");
      const child = request("child");
      const provision = (await timed(() => runtime.provision(parent, signal()))).ms;
      if (options.startHarness) await runtime.startHarness(parent.sandboxId, signal());
      const fork = (await timed(() => runtime.fork(parent.sandboxId, child, signal()))).ms;
      const freeze = (await timed(() => runtime.freeze(parent.sandboxId, signal()))).ms;
      const thaw = (await timed(() => runtime.thaw(parent.sandboxId, signal()))).ms;
      const closeFork = (await timed(() => runtime.close(child.sandboxId, signal()))).ms;
      const close = (await timed(() => runtime.close(parent.sandboxId, signal()))).ms;
      return { provision, fork, freeze, thaw, close, closeFork };
    },
    async cleanUp() {
      for (const sandbox of await runtime.list(signal()))
        await runtime.close(sandbox.sandboxId, signal()).catch(() => undefined);
    },
  };
}

/** The raw `docker` CLI doing the same steps on a container idling in `sleep infinity`. */
export function cliSubject(cli: DockerCli): Subject {
  return {
    name: "docker CLI",
    async rep() {
      const p = await timed(() => cli.provision());
      const f = await timed(() => cli.fork(p.value));
      const freeze = (await timed(() => cli.pause(p.value))).ms;
      const thaw = (await timed(() => cli.unpause(p.value))).ms;
      const closeFork = (await timed(() => cli.close(f.value.containerId, f.value.image))).ms;
      const close = (await timed(() => cli.close(p.value))).ms;
      return { provision: p.ms, fork: f.ms, freeze, thaw, close, closeFork };
    },
    cleanUp: () => cli.cleanUp(),
  };
}
