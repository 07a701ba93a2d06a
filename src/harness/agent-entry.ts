/**
 * What the harness loads when its agent is made, and not before (main.ts): the agent with pi's
 * tools, and a pooled harness's take. harness-build.ts builds it into pi.cjs beside pi's packages,
 * so main.cjs, which every harness compiles and runs before its socket answers, holds none of it.
 */
export { createHarnessAgent } from "./agent.ts";
export { applyPoolTake } from "./pool-take.ts";
