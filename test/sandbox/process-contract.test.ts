/**
 * The sandbox contract (contract.ts) on the process runtime as `make run` has it here: bubblewrap
 * and a cgroup freezer. The SIGSTOP/SIGCONT freezer is process-contract-signal.test.ts, the runtime's
 * own behaviour process.test.ts: three files, so that they run at once.
 */
import { runSandboxContract } from "./contract.ts";
import { processSetup } from "./process-setup.ts";

runSandboxContract("process (bubblewrap, cgroup freezer)", processSetup({ isolation: "bubblewrap" }));
