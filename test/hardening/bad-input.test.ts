import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Daemon, startDaemon, waitForState } from "../support/daemon.ts";
import { malformedRequests } from "./malformed-requests.ts";
import { type RawReply, type RawRequest, rawRequest } from "./raw-http.ts";

/** HARDENING_SEED=<n> replays another sequence; a failure names its seed and index. */
const SEED = Number(process.env.HARDENING_SEED ?? 20_240_605);
const COUNT = 2_400;
/** A refusal takes milliseconds; anything near this is a hang. */
const PER_REQUEST_TIMEOUT_MS = 10_000;

/** Why `reply` is not a proper refusal, or undefined when it is one. */
function refusalProblem(reply: RawReply): string | undefined {
  if (reply.status < 400 || reply.status > 499) return `status ${reply.status} ${reply.body.slice(0, 120)}`;
  if (!/^application\/json\b/.test(reply.headers["content-type"] ?? ""))
    return `content-type ${reply.headers["content-type"]} (${reply.status} ${reply.body.slice(0, 120)})`;
  let body: unknown;
  try {
    body = JSON.parse(reply.body);
  } catch {
    return `body is not JSON: ${reply.body.slice(0, 120)}`;
  }
  const keys = body !== null && typeof body === "object" ? Object.keys(body) : [];
  const error = (body as { error?: unknown } | null)?.error;
  if (keys.length !== 1 || keys[0] !== "error" || typeof error !== "string" || error === "")
    return `body is not {"error": string}: ${reply.body.slice(0, 120)}`;
  return undefined;
}

/** Run `work` over `items` with at most `width` in flight. */
async function inPool<T>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
}

async function liveRoot(d: Daemon, name: string): Promise<{ runId: string; rootAgentId: string }> {
  const created = await d.call("POST", "/runs", { spec: { name, script: [] }, keepAlive: true });
  assert.equal(created.status, 202);
  await waitForState(d, created.body.rootAgentId, "running");
  return created.body;
}

const portOf = (d: Daemon) => Number(new URL(d.url).port);

describe("bad input", () => {
  it(`refuses ${COUNT} seeded malformed requests on every route with a 4xx {"error"}, then serves a normal run`, async (t) => {
    const d = await startDaemon();
    t.after(() => d.stop());
    const a = await liveRoot(d, "a");
    const b = await liveRoot(d, "b");
    const requests = malformedRequests(SEED, COUNT, {
      runId: a.runId,
      agentId: a.rootAgentId,
      foreignAgentId: b.rootAgentId,
      bodyLimitBytes: 1024 * 1024,
    });

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    await inPool(requests, 8, async ({ label, request }, index) => {
      try {
        const reply = await rawRequest(portOf(d), request, PER_REQUEST_TIMEOUT_MS);
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
        const problem = refusalProblem(reply);
        if (problem) failures.push(`#${index} ${label} (${request.method} ${request.path.slice(0, 80)}): ${problem}`);
      } catch (err) {
        failures.push(`#${index} ${label} (${request.method} ${request.path.slice(0, 80)}): ${(err as Error).message}`);
      }
    });
    t.diagnostic(`seed ${SEED}: statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    const byFamily = new Map<string, number>();
    for (const failure of failures) {
      const family = /^#\d+ ([^:]+):/.exec(failure)?.[1] ?? "?";
      byFamily.set(family, (byFamily.get(family) ?? 0) + 1);
    }
    assert.deepEqual(
      failures.slice(0, 25),
      [],
      `${failures.length} of ${COUNT} malformed requests (seed ${SEED}) were not refused with a 4xx {"error"}: ${JSON.stringify(Object.fromEntries(byFamily))}`,
    );

    // Refused means refused: nothing was spawned, stopped or paused, and the daemon still answers.
    for (const run of [a, b]) {
      const snapshot = (await d.call("GET", `/runs/${run.runId}`)).body;
      assert.deepEqual(
        snapshot.agents.map((agent: { agentId: string; state: string }) => [agent.agentId, agent.state]),
        [[run.rootAgentId, "running"]],
      );
    }
    const created = await d.call("POST", "/runs", { spec: { name: "after", script: [] }, prompt: "still here" });
    assert.equal(created.status, 202);
    const result = await d.call("GET", `/agents/${created.body.rootAgentId}/result?wait=60`);
    assert.equal(result.status, 200);
    assert.equal(result.body.state, "settled");
    assert.equal(result.body.result, "still here");
  });

  it("refuses JSON nested deeper than 512 levels with a 400 (it used to be a 500), and accepts one at the limit", async (t) => {
    const d = await startDaemon();
    t.after(() => d.stop());
    const withArgs = (depth: number) =>
      `{"spec":{"name":"nested","script":[{"tool":"bash","args":{"command":"true","x":${"[".repeat(depth)}${"]".repeat(depth)}}},{"text":"ok"}]},"prompt":"go"}`;
    const post = (body: string) =>
      rawRequest(
        portOf(d),
        { method: "POST", path: "/runs", headers: [["content-type", "application/json"]], body },
        PER_REQUEST_TIMEOUT_MS,
      );
    // The body's own levels (object, spec, script, step, args) come on top of the array's.
    for (const depth of [508, 5_000, 100_000]) {
      const refused = await post(withArgs(depth));
      assert.equal(refused.status, 400, `${depth}: ${refused.body}`);
      assert.deepEqual(JSON.parse(refused.body), { error: "body: nested deeper than 512 levels" });
    }
    const accepted = await post(withArgs(507));
    assert.equal(accepted.status, 202, accepted.body);
    assert.equal(
      (await d.call("GET", `/agents/${JSON.parse(accepted.body).rootAgentId}/result?wait=60`)).body.result,
      "ok",
    );
  });

  it("refuses a body over the configured bodyLimitBytes with 413, with or without a content-length, and accepts one of exactly that size", async (t) => {
    const limit = 2_048;
    const d = await startDaemon({ bodyLimitBytes: limit });
    t.after(() => d.stop());
    const root = await liveRoot(d, "limited");
    const sized = (size: number, extra: Record<string, unknown>) => {
      const base = JSON.stringify({ ...extra, prompt: "" });
      return base.replace('"prompt":""', `"prompt":"${"p".repeat(size - base.length)}"`);
    };
    const tooBig: RawRequest[] = [
      {
        method: "POST",
        path: "/runs",
        headers: [["content-type", "application/json"]],
        body: sized(limit + 1, { spec: { name: "big", script: [] } }),
      },
      {
        method: "POST",
        path: "/runs",
        headers: [["content-type", "application/json"]],
        body: sized(limit * 50, { spec: { name: "big", script: [] } }),
        framing: "chunked",
      },
      {
        method: "POST",
        path: `/runs/${root.runId}/agents`,
        headers: [["content-type", "application/json"]],
        body: sized(limit * 4, { parentAgentId: root.rootAgentId, spec: { name: "big", script: [] } }),
      },
      {
        method: "POST",
        path: `/agents/${root.rootAgentId}/prompt`,
        headers: [["content-type", "application/json"]],
        body: JSON.stringify({ text: "t".repeat(limit) }),
      },
      {
        method: "POST",
        path: `/agents/${root.rootAgentId}/steer`,
        headers: [["content-type", "application/json"]],
        body: JSON.stringify({ message: "m".repeat(limit * 10) }),
        framing: "chunked",
      },
    ];
    for (const request of tooBig) {
      const reply = await rawRequest(portOf(d), request, PER_REQUEST_TIMEOUT_MS);
      assert.equal(reply.status, 413, `${request.method} ${request.path} ${request.framing ?? "length"}`);
      assert.deepEqual(JSON.parse(reply.body), {
        error: "The request body is over the limit of 2048 bytes; the daemon's SWARM_BODY_LIMIT sets it.",
      });
    }
    // Exactly at the limit is accepted: the limit is the configured one, not a fixed smaller one.
    const atLimit = sized(limit, { spec: { name: "fits", script: [] } });
    assert.equal(Buffer.byteLength(atLimit), limit);
    const accepted = await rawRequest(
      portOf(d),
      { method: "POST", path: "/runs", headers: [["content-type", "application/json"]], body: atLimit },
      PER_REQUEST_TIMEOUT_MS,
    );
    assert.equal(accepted.status, 202, accepted.body);
    const result = await d.call("GET", `/agents/${JSON.parse(accepted.body).rootAgentId}/result?wait=60`);
    assert.equal(
      result.body.result,
      "p".repeat(limit - JSON.stringify({ spec: { name: "fits", script: [] }, prompt: "" }).length),
    );
  });
});
