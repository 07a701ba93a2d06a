import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { PermissionView } from "../swarm-api.ts";
import type { ToolDeps } from "./run-tools.ts";
import { ListPermissionsInput, ResolvePermissionInput } from "./tool-inputs.ts";
import { guarded, toolOk } from "./tool-result.ts";

/** Approval tools: GET /runs/:runId/permissions and POST /agents/:agentId/permissions/:requestId. */
export function registerPermissionTools(server: McpServer, { client }: ToolDeps): void {
  server.registerTool(
    "swarm_list_permissions",
    {
      title: "List approval requests",
      description:
        'The run\'s approval requests, oldest first: tool calls an agent\'s spec holds for a decision (its "approve" rules: "*" or {tool, match}). Each has requestId, agentId, tool, args (the call\'s arguments), at, expiresAt (when approveTimeoutMs denies it; null: never) and state; resolved ones also decision (allow or deny), by (operator, stop, run-deleted or timeout), message and resolvedAt. The asking agent waits in its turn until swarm_resolve_permission answers. Follow new ones with swarm_watch_events (untilTypes ["permission_request"]).',
      inputSchema: ListPermissionsInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ runId, state }) =>
      guarded(async () => {
        const { permissions } = await client.listPermissions(runId, state);
        const which = state === "all" ? "" : `${state} `;
        const list = permissions.map((p) => `${p.requestId} (${p.agentId} ${p.tool})`).join(", ");
        return toolOk(`${permissions.length} ${which}approval request(s) in ${runId}${list ? `: ${list}` : ""}.`, {
          runId,
          state,
          permissions,
        });
      }),
  );

  server.registerTool(
    "swarm_resolve_permission",
    {
      title: "Allow or deny a tool call",
      description:
        'Answer a pending approval request of an agent: "allow" runs the held tool call, "deny" makes it fail with message as its error, and the agent\'s turn goes on either way. Returns the request as resolved. Refused with HTTP 404 for an unknown request (or one of another agent) and 409 when it was already resolved (by the operator, a stop of the agent, a deleted run or its timeout).',
      inputSchema: ResolvePermissionInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ agentId, requestId, decision, message }) =>
      guarded(async () => {
        const resolved = await client.resolvePermission(agentId, requestId, { decision, message });
        return toolOk(
          `${verdict(resolved)} ${resolved.tool} call of ${resolved.agentId} (request ${resolved.requestId}).`,
          { ...resolved },
        );
      }),
  );
}

function verdict(p: PermissionView): string {
  return p.decision === "deny" ? `Denied${p.message ? ` ("${p.message}")` : ""}:` : "Allowed:";
}
