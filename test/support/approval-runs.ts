import assert from "node:assert/strict";
import type { Daemon, Json } from "./daemon.ts";
import { pollUntil } from "./poll.ts";

/** A daemon's JSON call, in process (`startDaemon`) or as a process of its own (`spawnDaemon`). */
type Call = Daemon["call"];

/** The run's approval inbox once it holds `count` requests in `state`. */
export const inbox = (call: Call, runId: string, count: number, state = "pending") =>
  pollUntil(
    async () => (await call("GET", `/runs/${runId}/permissions?state=${state}`)).body.permissions as Json[],
    (list) => list.length >= count,
    `run ${runId} never had ${count} ${state} approval request(s)`,
  );

/** A keepAlive root named "gated" with `spec` (its `approve` and script), prompted with `prompt`. */
export async function startGatedRun(call: Call, spec: Json, prompt = "go") {
  const created = await call("POST", "/runs", { spec: { name: "gated", ...spec }, prompt, keepAlive: true });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  return { runId: created.body.runId as string, agentId: created.body.rootAgentId as string };
}
