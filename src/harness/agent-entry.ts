/**
 * What the harness loads when its agent is made, and not before (main.ts): the agent with pi's
 * tools and the spec's schema, and a pooled harness's take. harness-build.ts builds it into pi.cjs
 * beside pi's packages, so main.cjs, which every harness compiles and runs before its socket
 * answers, holds none of it (nor the full zod build it uses).
 */
import { AgentSpecSchema } from "../spec/agent-spec.ts";

export { createHarnessAgent } from "./agent.ts";
export { applyPoolTake } from "./pool-take.ts";
export { AgentSpecSchema };

/**
 * Run at build time only (boot.ts `--write-code-cache`), before pi.cjs's code cache is made: V8
 * caches the functions compiled so far, so what every agent's making runs once (the spec's parse,
 * ~50 ms of lazy compiling otherwise) comes from the cache.
 */
export function warmCodeCache(): void {
  AgentSpecSchema.parse({ name: "warm", script: [{ text: "warm" }], env: { WARM: "1" } });
}
