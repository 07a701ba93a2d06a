/**
 * The route suite: the end-to-end suites that drive every route of a run's life through real
 * sandboxes (create, prompt, result, snapshot, events, spawn with fork and inputs, pause and
 * resume with the freezer, steer, stop, delete, forks with compare and adopt). They run on the simulated runtime as files of
 * their own; test/e2e/process.test.ts and test/e2e/docker.test.ts run them once more on the process
 * and docker runtimes, with the same assertions.
 */
import type { RuntimeKind } from "../support/daemon.ts";

export async function routeSuite(kind: Exclude<RuntimeKind, "simulated">): Promise<void> {
  process.env.SWARM_E2E_RUNTIME = kind;
  await import("./lifecycle.test.ts");
  await import("./spawn.test.ts");
  await import("./controls.test.ts");
  await import("./forks.test.ts");
}
