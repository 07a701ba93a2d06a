import { SwarmError } from "../errors.ts";
import type { SandboxRuntime } from "./runtime.ts";

/** Placeholder fork methods of a runtime that cannot fork conversations yet. */
export function forksUnsupported(
  kind: string,
): Pick<SandboxRuntime, "snapshot" | "openTree" | "applyChanges" | "dropRun"> {
  const refuse = async (): Promise<never> => {
    throw new SwarmError("RUNTIME_UNAVAILABLE", `the ${kind} runtime does not fork conversations yet`);
  };
  return { snapshot: refuse, openTree: refuse, applyChanges: refuse, dropRun: async () => undefined };
}
