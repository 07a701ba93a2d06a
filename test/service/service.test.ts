/**
 * The service layer (createSwarmService on a real ledger and result store, sandboxes from the
 * memory runtime), with no HTTP in between. One test process for the whole folder: the memory
 * runtime runs the real pi agent in-process, and importing pi takes ~2.5 s, paid once here rather
 * than once per file. Each topic is a module of its own.
 */
import "./runs.ts";
import "./spawn.ts";
import "./controls.ts";
import "./steer.ts";
import "./restart.ts";
import "./held-effects.ts";
import "./budgets.ts";
import "./gateway-faults.ts";
import "./purge.ts";
