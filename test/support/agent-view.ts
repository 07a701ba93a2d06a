import type { Daemon, Json } from "./daemon.ts";

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
