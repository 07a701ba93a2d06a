/**
 * The sandbox contract (contract.ts) on the process runtime with the freezer a machine without a
 * usable cgroup freezer gets: SIGSTOP/SIGCONT of every sandbox process.
 */
import { runSandboxContract } from "./contract.ts";
import { processSetup } from "./process-setup.ts";

runSandboxContract(
  "process (bubblewrap, SIGSTOP/SIGCONT fallback)",
  processSetup({ isolation: "bubblewrap", freezer: "signal" }),
);
