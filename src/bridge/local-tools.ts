import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { SpecStore } from "../client/spec-store.ts";
import type { SwarmClient } from "../client/swarm-client.ts";
import { AgentSpecSchema } from "../spec/agent-spec.ts";
import { reportProgress } from "./progress.ts";
import { startService } from "./start-service.ts";
import { guarded, toolOk } from "./tool-result.ts";

/** Inputs of the tools that call no route (a route's tool takes its input from the route: src/api/tools.ts). */
const StartServiceInput = z.object({
  runtime: z
    .enum(["process", "docker"])
    .optional()
    .describe(
      'Sandbox runtime: "process" (embedded, the default unless SWARM_RUNTIME says otherwise) or "docker" (the daemon runs in a container and sandboxes are containers; needs a Docker engine).',
    ),
  waitSeconds: z
    .number()
    .int()
    .min(1)
    .max(240)
    .default(60)
    .describe("How long to wait for the service to answer /health (default 60)."),
});

const SpecAddInput = z.object({
  spec: AgentSpecSchema.describe(
    'The agent spec to save (validated now): "name" plus exactly one of "model" or "script".',
  ),
  name: z.string().min(1).max(64).optional().describe("Name to save it under; defaults to the spec's own name."),
  overwrite: z.boolean().default(true).describe("Replace a saved spec of the same name (default true)."),
});

const SpecListInput = z.object({});

const SpecRemoveInput = z.object({
  name: z.string().min(1).describe("Name of the saved spec to remove (see swarm_spec_list)."),
});

/** Tools that act on this machine, not through the service: start it, and the saved-spec cache. */
export function registerLocalTools(
  server: McpServer,
  { client, specs }: { client: SwarmClient; specs: SpecStore },
  env: NodeJS.ProcessEnv,
): void {
  server.registerTool(
    "swarm_start_service",
    {
      title: "Start the swarm service",
      description:
        "Start swarmd on this machine where SWARM_URL points, unless it already answers there. runtime process (default): a background daemon with process sandboxes. runtime docker: checks the Docker engine, then runs the daemon in a container whose sandboxes are containers. Waits until the service answers and reports where it listens.",
      inputSchema: StartServiceInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ runtime, waitSeconds }, extra) =>
      guarded(async () => {
        const chosen = runtime ?? (env.SWARM_RUNTIME === "docker" ? "docker" : "process");
        const stop = reportProgress(extra, waitSeconds, "starting swarmd");
        const started = await startService(client, { runtime: chosen, waitSeconds, env, signal: extra.signal }).finally(
          stop,
        );
        const summary = started.alreadyRunning
          ? `swarmd already answers at ${started.url}; nothing was started.`
          : `swarmd started (${started.mode}, runtime ${started.runtime}) and listening at ${started.url}; log: ${started.log}.`;
        return toolOk(summary, { ...started });
      }),
  );

  server.registerTool(
    "swarm_spec_add",
    {
      title: "Save an agent spec",
      description: `Validate an agent spec and save it in the local spec cache (${specs.dir}) under a name, so swarm_create_run and swarm_spawn_agent can use it as specName.`,
      inputSchema: SpecAddInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ spec, name, overwrite }) =>
      guarded(async () => {
        const saved = specs.add(spec, { name, overwrite });
        return toolOk(`Spec "${saved.name}" ${saved.replaced ? "replaced" : "saved"} in ${specs.dir}.`, {
          name: saved.name,
          file: saved.file,
          replaced: saved.replaced,
          spec: saved.spec,
        });
      }),
  );

  server.registerTool(
    "swarm_spec_list",
    {
      title: "List saved agent specs",
      description: "The agent specs saved in the local spec cache, with their names (usable as specName) and contents.",
      inputSchema: SpecListInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () =>
      guarded(async () => {
        const { specs: saved, problems } = specs.list();
        const list = saved.map((s) => ({
          name: s.name,
          file: s.file,
          savedAt: new Date(s.savedAt).toISOString(),
          spec: s.spec,
        }));
        return toolOk(
          `${list.length} saved spec(s) in ${specs.dir}${problems.length ? `; ${problems.length} unreadable` : ""}.`,
          { dir: specs.dir, specs: list, problems },
        );
      }),
  );

  server.registerTool(
    "swarm_spec_remove",
    {
      title: "Remove a saved agent spec",
      description: "Delete a spec from the local spec cache. Runs already created from it are not affected.",
      inputSchema: SpecRemoveInput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ name }) =>
      guarded(async () => {
        const removed = specs.remove(name);
        return toolOk(removed ? `Spec "${name}" removed.` : `No spec named "${name}" was saved; nothing to remove.`, {
          name,
          removed,
        });
      }),
  );
}
