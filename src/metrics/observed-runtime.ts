import type { SandboxRuntime } from "../sandbox/runtime.ts";

/** Told of each runtime call as it ends, failed or not. Must not throw. */
export type SandboxCallObserver = (runtime: string, operation: string, seconds: number) => void;

/**
 * The runtime with every asynchronous call timed: a decorator on the port, so the process, docker
 * and simulated adapters know nothing of metrics. Errors and results pass through untouched.
 */
export function observeRuntime(runtime: SandboxRuntime, observe: SandboxCallObserver): SandboxRuntime {
  const timed =
    <A extends unknown[], R>(operation: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const start = performance.now();
      try {
        return await call(...args);
      } finally {
        observe(runtime.kind, operation, (performance.now() - start) / 1000);
      }
    };
  return {
    kind: runtime.kind,
    harnessOutOfReach: runtime.harnessOutOfReach,
    ...(runtime.networkRefusal !== undefined ? { networkRefusal: runtime.networkRefusal } : {}),
    provision: timed("provision", (req, signal) => runtime.provision(req, signal)),
    fork: timed("fork", (parent, req, signal) => runtime.fork(parent, req, signal)),
    writeInputs: timed("write_inputs", (id, files, signal) => runtime.writeInputs(id, files, signal)),
    startHarness: timed("start_harness", (id, signal) => runtime.startHarness(id, signal)),
    hibernate: timed("hibernate", (id, signal) => runtime.hibernate(id, signal)),
    connect: timed("connect", (id, signal) => runtime.connect(id, signal)),
    freeze: timed("freeze", (id, signal) => runtime.freeze(id, signal)),
    thaw: timed("thaw", (id, signal) => runtime.thaw(id, signal)),
    close: timed("close", (id, signal) => runtime.close(id, signal)),
    inspect: timed("inspect", (id, signal) => runtime.inspect(id, signal)),
    list: timed("list", (signal) => runtime.list(signal)),
    nodes: timed("nodes", (signal) => runtime.nodes(signal)),
    snapshot: timed("snapshot", (id, baseId, runId, signal, copies) =>
      runtime.snapshot(id, baseId, runId, signal, copies),
    ),
    openTree: timed("open_tree", (ref, signal) => runtime.openTree(ref, signal)),
    applyChanges: timed("apply_changes", (id, changes, signal) => runtime.applyChanges(id, changes, signal)),
    dropRun: timed("drop_run", (runId, signal) => runtime.dropRun(runId, signal)),
    controlDir: (id) => runtime.controlDir(id),
    ...(runtime.dispose ? { dispose: runtime.dispose.bind(runtime) } : {}),
    ...(runtime.watch ? { watch: runtime.watch.bind(runtime) } : {}),
    ...(runtime.reachable ? { reachable: runtime.reachable.bind(runtime) } : {}),
    ...(runtime.whenReachable ? { whenReachable: runtime.whenReachable.bind(runtime) } : {}),
  };
}
