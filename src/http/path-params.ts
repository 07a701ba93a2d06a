import { PATH_PARAMS } from "../api/fields.ts";
import { SwarmError } from "../errors.ts";

/**
 * Ids in paths (`PATH_PARAMS` of src/api/fields.ts: `r_<hex>`, `a_<hex>`, `p_<hex>`). A malformed
 * id is answered as the 404 of its kind rather than a 400: no such run or agent can exist, and the
 * client's fix is the same (use a real id).
 */
export function runIdParam(value: string): string {
  if (!PATH_PARAMS.runId.pattern.test(value)) throw new SwarmError("RUN_NOT_FOUND", `Run ${value} does not exist.`);
  return value;
}

/** Approval request ids are `p_<hex>`; anything else names no request. */
export function permissionIdParam(value: string): string {
  if (!PATH_PARAMS.requestId.pattern.test(value))
    throw new SwarmError("PERMISSION_NOT_FOUND", `Approval request ${value} does not exist.`);
  return value;
}

export function agentIdParam(value: string): string {
  if (!PATH_PARAMS.agentId.pattern.test(value))
    throw new SwarmError("AGENT_NOT_FOUND", `Agent ${value} does not exist.`);
  return value;
}
