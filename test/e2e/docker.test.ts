/**
 * The end-to-end suites again, on the docker runtime: same routes, same assertions, containers
 * instead of processes. Required in CI; elsewhere skipped with one line when no engine answers.
 */
import { whenDocker } from "../support/docker-engine.ts";

await whenDocker("end-to-end on docker", async () => {
  process.env.SWARM_E2E_RUNTIME = "docker";
  await import("./lifecycle.test.ts");
  await import("./spawn.test.ts");
  await import("./controls.test.ts");
  await import("./limits.test.ts");
  await import("./hibernation.test.ts");
  await import("./approvals.test.ts");
  await import("./drain.test.ts");
});
