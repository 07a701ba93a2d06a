/**
 * The route suite (test/e2e/route-suite.ts) on the cluster runtime: the same routes and
 * assertions as on process and docker, with every sandbox a swarm service on the test cluster.
 */
import { routeSuite } from "../e2e/route-suite.ts";
import { whenCluster } from "../support/test-cluster.ts";

await whenCluster("end-to-end on the cluster", () => routeSuite("cluster"));
