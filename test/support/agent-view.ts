import assert from "node:assert/strict";
import type { Daemon, Json } from "./daemon.ts";
import { pollUntil } from "./poll.ts";

/**
 * Spawn a scripted child under `parentAgentId` (kept alive unless `extra` says otherwise) and
 * return its id; anything but a 202 fails the test with the service's answer.
 */
export async function spawnAgent(
  call: Daemon["call"],
  runId: string,
  parentAgentId: string,
  name: string,
  extra: Json = {},
): Promise<string> {
  const answer = await call("POST", `/runs/${runId}/agents`, {
    parentAgentId,
    spec: { name, script: [] },
    keepAlive: true,
    ...extra,
  });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return answer.body.agentId as string;
}

/** Poll the agent's view (`GET /agents/:id`) until `match` holds, and return it. */
export async function viewWhen(
  call: Daemon["call"],
  agentId: string,
  match: (view: Json) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = (await call("GET", `/agents/${agentId}`)).body;
    if (match(view)) return view;
    if (Date.now() > deadline) throw new Error(`agent ${agentId} never ${what}: ${JSON.stringify(view)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The agent's view once it hibernated. */
export const asleep = (call: Daemon["call"], agentId: string) =>
  viewWhen(call, agentId, (v) => v.hibernated === true, "hibernated");

/** The agent's newest result text once it is `text` (a prompt's turn settled with it). */
export const settledWith = (call: Daemon["call"], agentId: string, text: string) =>
  pollUntil(
    async () => (await call("GET", `/agents/${agentId}/result`)).body.result,
    (result) => result === text,
    `${agentId}'s result`,
  );
