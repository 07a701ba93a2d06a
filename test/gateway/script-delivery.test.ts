/**
 * A scripted step counts as delivered only once its answer has ended: a daemon killed between the
 * answer's last content and its end leaves the harness with a cut-off response, and the harness's
 * retry of the same request must get the same step again, not the next one (the chaos test once
 * saw a mid end `done` having never spawned its leaves: its spawn step's answer was cut off after
 * being marked delivered).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LedgerScriptCursor } from "../../actors/run/script-cursor.ts";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import { gatewayBaseUrl } from "../../src/gateway/harness-model.ts";
import type { ModelCaller } from "../../src/gateway/model-caller.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { SCRIPTED_MODEL } from "../../src/gateway/scripted-model.ts";
import { CONTROL_FILES } from "../../src/harness/protocol.ts";
import { until } from "../support/poll.ts";

const BODY = JSON.stringify({
  model: "scripted",
  max_tokens: 100,
  stream: true,
  messages: [{ role: "user", content: "go" }],
});

/** One model call on the gateway socket; `cutAt` hangs up once the answer holds that text. */
function call(socketPath: string, cutAt?: string): Promise<string> {
  const path = `${new URL(gatewayBaseUrl(SCRIPTED_MODEL.baseUrl)).pathname}/v1/messages`;
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, method: "POST", headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
          if (cutAt && text.includes(cutAt)) {
            req.destroy();
            resolve(text);
          }
        });
        res.on("end", () => resolve(text));
        res.on("error", () => resolve(text));
      },
    );
    req.on("error", (err) => (cutAt ? undefined : reject(err)));
    req.end(BODY);
  });
}

describe("a scripted step's delivery", () => {
  let dir: string;
  let gateway: ModelGateway;
  let socket: string;
  const index = new Map<string, string>();
  const delivered: number[] = [];
  /** While set, recording a call's usage never ends: the daemon dies there. */
  let dying = false;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "swarmd-script-delivery-"));
    gateway = new ModelGateway(loadModelCatalog());
    const cursor = new LedgerScriptCursor(
      {
        getIndex: async (key) => index.get(key),
        put: async (key, value) => void index.set(key, value),
      },
      "a_1",
    );
    const caller: ModelCaller = {
      agentId: "a_1",
      model: SCRIPTED_MODEL,
      script: [{ text: "first step" }, { text: "second step" }],
      cursor: {
        take: (hash) => cursor.take(hash),
        delivered: async (i) => {
          delivered.push(i);
          await cursor.delivered(i);
        },
      },
      admit: async () => undefined,
      holding: () => undefined,
      record: () => (dying ? new Promise<void>(() => undefined) : Promise.resolve()),
      refused: () => undefined,
      whenRunning: async () => undefined,
    };
    await gateway.open(dir, caller);
    socket = join(dir, CONTROL_FILES.modelSocket);
  });
  after(async () => {
    await gateway.closeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers the same step again to a request whose answer was cut off before its end, and the next step only after", async () => {
    dying = true;
    const cut = await call(socket, "message_stop");
    assert.match(cut, /first step/, "all of the step's content was sent");
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(delivered, [], "not delivered: the answer never ended");

    dying = false;
    const again = await call(socket);
    assert.match(again, /first step/, "the retry gets the same step");
    await until(async () => delivered.length === 1, "the step delivered once its answer ended");
    assert.deepEqual(delivered, [0]);
    assert.match(await call(socket), /second step/, "the next call the next step");
  });
});
