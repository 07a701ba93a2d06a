/**
 * A harness connection that drops while the daemon lives: the daemon reconnects (counted in
 * `swarmd_harness_reconnects_total`), the harness sends its pending approval again on the new
 * connection, and that finds the same request, so one decision reaches the tool once.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { after, before, describe, it } from "node:test";
import { createProcessRuntime } from "../../src/sandbox/process/process-runtime.ts";
import type { SandboxRuntime } from "../../src/sandbox/runtime.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";
import { until } from "../support/poll.ts";

/** The process runtime, keeping each harness connection it opens so the test can cut them. */
function cuttable(inner: SandboxRuntime, sockets: Duplex[]): SandboxRuntime {
  return new Proxy(inner, {
    get(target, key) {
      if (key === "connect")
        return async (sandboxId: string, signal: AbortSignal) => {
          const socket = await target.connect(sandboxId, signal);
          sockets.push(socket);
          return socket;
        };
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("a dropped harness connection (process runtime)", () => {
  let d: Daemon;
  const sockets: Duplex[] = [];
  before(async () => {
    d = await startDaemon({
      runtime: (dataDir) =>
        cuttable(createProcessRuntime({ dataDir, logger: { info: () => undefined, warn: () => undefined } }), sockets),
    });
  });
  after(() => d.stop());

  const reconnects = async () =>
    (await d.metrics?.registry.getSingleMetric("swarmd_harness_reconnects_total")?.get())?.values[0]?.value ?? 0;

  it("is opened again; a pending approval re-sent on the new connection is the same request, and the tool runs once", async () => {
    const run = (
      await d.call("POST", "/runs", {
        spec: {
          name: "gated",
          approve: [{ tool: "bash" }],
          script: [
            { tool: "bash", args: { command: "echo once >> /work/ran.txt; cat /work/ran.txt" } },
            { text: "{{lastToolResult}}" },
          ],
        },
        keepAlive: true,
        prompt: "go",
      })
    ).body;
    const pending = async (): Promise<Json[]> =>
      (await d.call("GET", `/runs/${run.runId}/permissions`)).body.permissions;
    await until(async () => (await pending()).length === 1, "the approval request");
    const [request] = await pending();
    const counted = await reconnects();
    assert.ok(sockets.length >= 1);

    for (const socket of sockets.splice(0)) socket.destroy();
    await until(() => sockets.length > 0, "a new harness connection");
    assert.ok((await reconnects()) > counted, "swarmd_harness_reconnects_total counted the reconnect");

    // The old connection is gone, so the decision can reach the harness only through the call it
    // sends again on the new one: the settled turn proves the re-send, and one request in all that
    // it found the same request.
    assert.equal(
      (await d.call("POST", `/agents/${run.rootAgentId}/permissions/${request.requestId}`, { decision: "allow" }))
        .status,
      202,
    );
    const settled = (await d.call("GET", `/agents/${run.rootAgentId}/result?wait=60`)).body;
    assert.equal(settled.result.trim(), "once", "the tool ran once");
    assert.deepEqual(
      (await d.call("GET", `/runs/${run.runId}/permissions?state=all`)).body.permissions.map((p: Json) => p.requestId),
      [request.requestId],
      "one request in all",
    );
    const sandboxId = (await d.call("GET", `/agents/${run.rootAgentId}`)).body.sandboxId;
    assert.equal(readFileSync(join(d.dataDir, "sandboxes", sandboxId, "work", "ran.txt"), "utf8"), "once\n");
    assert.equal(
      (await d.call("GET", `/agents/${run.rootAgentId}`)).body.state,
      "running",
      "the agent lived through the drop",
    );
    await d.call("DELETE", `/runs/${run.runId}`);
  });
});
