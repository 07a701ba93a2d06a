/**
 * The end-to-end suites again, on the docker runtime: same routes, same assertions, containers
 * instead of processes. Required in CI; elsewhere skipped with one line when no engine answers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { dockerUnusable } from "../support/docker-engine.ts";

const reason = await dockerUnusable();
if (reason === undefined) {
  process.env.SWARM_E2E_RUNTIME = "docker";
  await import("./lifecycle.test.ts");
  await import("./spawn.test.ts");
  await import("./controls.test.ts");
  await import("./limits.test.ts");
} else if (process.env.CI === "true") {
  test("end-to-end on docker: a Docker engine and the sandbox image are required when CI=true", () => assert.fail(reason));
} else {
  test("end-to-end on docker", { skip: `docker end-to-end tests skipped: ${reason}` }, () => undefined);
}
