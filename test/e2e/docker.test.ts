/**
 * The route suite (route-suite.ts) on the docker runtime: same routes, same assertions, containers
 * instead of processes. Required in CI; elsewhere skipped with one line when no engine answers.
 */
import { whenDocker } from "../support/docker-engine.ts";
import { routeSuite } from "./route-suite.ts";

await whenDocker("end-to-end on docker", () => routeSuite("docker"));
