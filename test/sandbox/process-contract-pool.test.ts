/**
 * The sandbox contract (contract.ts) on the process runtime with a pool of sandboxes started ahead
 * (`SWARM_POOL_SIZE`, docs/pool.md): every sandbox the contract provisions while one is ready is
 * a taken one, and must behave as one made cold. The pool's own behaviour is process-pool.test.ts.
 */
import { runSandboxContract } from "./contract.ts";
import { processSetup } from "./process-setup.ts";

runSandboxContract(
  "process (bubblewrap, cgroup freezer, a pool of 2)",
  processSetup({ isolation: "bubblewrap", pool: { size: 2 } }),
);
