/**
 * The tools a spec may name: pi's four and the two the daemon serves. Apart from the spec's schema
 * (agent-spec.ts) so the harness, which takes the spec as the daemon validated it, carries no zod
 * build for it.
 */
export const TOOL_NAMES = ["bash", "read", "write", "edit", "spawn_agent", "await_result"] as const;
