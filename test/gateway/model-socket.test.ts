import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import type { CallUsage } from "../../src/gateway/model-caller.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { CONTROL_FILES } from "../../src/harness/protocol.ts";
import { startAnthropicUpstream, type Upstream } from "../support/model-upstreams.ts";
import { standaloneCaller } from "../support/script-gateway.ts";

/** A raw request on a gateway socket, as a hostile process that reached it could send. */
function post(
  socketPath: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, method, headers: { "content-type": "application/json", ...headers } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("model gateway socket: what reaches the provider", () => {
  let dir: string;
  let upstream: Upstream;
  let gateway: ModelGateway;
  const usage: CallUsage[] = [];
  let socket: string;

  before(async () => {
    upstream = await startAnthropicUpstream({
      answer: () => ({ reply: { text: "hi" }, usage: { input: 10, output: 2 } }),
    });
    dir = mkdtempSync(join(tmpdir(), "swarmd-gw-"));
    const modelsFile = join(dir, "models.json");
    writeFileSync(
      modelsFile,
      JSON.stringify({
        providers: {
          local: {
            baseUrl: upstream.url,
            api: "anthropic-messages",
            apiKey: "the-real-key",
            models: [{ id: "cheap", cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } }, { id: "dear" }],
          },
        },
      }),
    );
    const catalog = loadModelCatalog(modelsFile);
    gateway = new ModelGateway(catalog);
    await gateway.open(dir, standaloneCaller(catalog.resolve({ provider: "local", id: "cheap" }, "spec.model"), usage));
    socket = join(dir, CONTROL_FILES.modelSocket);
  });
  after(async () => {
    await gateway.closeAll();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes the harness's model file with the gateway's URL and a placeholder key, never the real one", () => {
    const file = readFileSync(join(dir, CONTROL_FILES.model), "utf8");
    assert.ok(!file.includes("the-real-key"));
    const parsed = JSON.parse(file) as { model: { baseUrl: string }; apiKey: string };
    assert.equal(parsed.model.baseUrl, `http://gw.swarmd/u/${new URL(upstream.url).host}`);
    assert.equal(parsed.apiKey, "swarmd-gateway");
    assert.equal(statSync(socket).mode & 0o777, 0o600, "the socket is its owner's alone");
  });

  it("pins the model, forwards only the headers that shape a call, adds the daemon's key, and meters the call", async () => {
    const body = JSON.stringify({
      model: "dear",
      stream: true,
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    });
    const answer = await post(socket, `/u/${new URL(upstream.url).host}/v1/messages`, body, {
      "x-api-key": "agent-chosen",
      authorization: "Bearer agent-chosen",
      "openai-organization": "org-someone-else",
      "accept-encoding": "gzip",
      "anthropic-version": "2023-06-01",
    });
    assert.equal(answer.status, 200);
    assert.match(answer.text, /message_stop/);
    const call = upstream.calls.at(-1)!;
    assert.equal((call.body as { model: string }).model, "cheap", "the agent's model, not the one it named");
    assert.equal(call.headers["x-api-key"], "the-real-key");
    assert.equal(call.headers.authorization, undefined, "the caller's credentials never go upstream");
    assert.equal(
      call.headers["openai-organization"],
      undefined,
      "nor a header that would bill another account with the daemon's key",
    );
    assert.notEqual(call.headers["accept-encoding"], "gzip", "nor one that would hide the answer from the meter");
    assert.equal(call.headers["anthropic-version"], "2023-06-01", "the headers that shape the call go through");
    const last = usage.at(-1)!;
    assert.deepEqual(
      { provider: last.provider, model: last.model, input: last.inputTokens, output: last.outputTokens },
      { provider: "local", model: "cheap", input: 10, output: 2 },
    );
    assert.ok(Math.abs(last.costUsd - 12 / 1e6) < 1e-15, "priced at the agent's model: $1 per million in and out");
  });

  it("refuses other paths and methods, bodies that are not JSON objects, and bodies past the size cap", async () => {
    const host = new URL(upstream.url).host;
    const before = upstream.calls.length;
    assert.equal((await post(socket, `/u/${host}/v1/complete`, "{}")).status, 404);
    assert.equal((await post(socket, `/u/evil.example/v1/messages`, "{}")).status, 404, "another host in the path");
    assert.equal((await post(socket, `/u/${host}/v1/messages`, "", {}, "GET")).status, 404);
    const notJson = await post(socket, `/u/${host}/v1/messages`, "not json");
    assert.equal(notJson.status, 400);
    assert.match(notJson.text, /not a JSON object/);
    assert.equal((await post(socket, `/u/${host}/v1/messages`, "[1,2]")).status, 400);
    assert.equal(
      (
        await post(socket, `/u/${host}/v1/messages`, Buffer.alloc(33 * 1024 * 1024, 0x20)).catch(() => ({
          status: 413,
          text: "",
        }))
      ).status,
      413,
    );
    assert.equal(upstream.calls.length, before, "nothing of it reached the provider");
  });
});

describe("model gateway socket: a provider's refusal", () => {
  it("passes the refusal on with its status, the daemon's key blanked where the provider quotes it", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          type: "error",
          error: { type: "authentication_error", message: "invalid x-api-key: sk-quoted-secret" },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const dir = mkdtempSync(join(tmpdir(), "swarmd-gw-"));
    const modelsFile = join(dir, "models.json");
    writeFileSync(
      modelsFile,
      JSON.stringify({
        providers: {
          local: {
            baseUrl: `http://127.0.0.1:${port}`,
            api: "anthropic-messages",
            apiKey: "sk-quoted-secret",
            models: [{ id: "m" }],
          },
        },
      }),
    );
    const catalog = loadModelCatalog(modelsFile);
    const gateway = new ModelGateway(catalog);
    const usage: CallUsage[] = [];
    try {
      await gateway.open(dir, standaloneCaller(catalog.resolve({ provider: "local", id: "m" }, "spec.model"), usage));
      const answer = await post(
        join(dir, CONTROL_FILES.modelSocket),
        `/u/127.0.0.1:${port}/v1/messages`,
        JSON.stringify({ messages: [] }),
      );
      assert.equal(answer.status, 401);
      assert.match(answer.text, /invalid x-api-key: \[key\]/);
      assert.ok(!answer.text.includes("sk-quoted-secret"));
      assert.equal(usage.length, 0, "a refused call costs nothing and is not metered");
    } finally {
      await gateway.closeAll();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("model gateway socket: an Anthropic OAuth token", () => {
  it("shapes the harness's requests as OAuth ones (its placeholder is an sk-ant-oat one) and sends the token as a Bearer", async () => {
    const upstream = await startAnthropicUpstream({ answer: () => ({ reply: { text: "hi" } }) });
    const dir = mkdtempSync(join(tmpdir(), "swarmd-gw-"));
    const modelsFile = join(dir, "models.json");
    writeFileSync(
      modelsFile,
      JSON.stringify({ providers: { anthropic: { baseUrl: upstream.url, apiKey: "sk-ant-oat01-daemon-token" } } }),
    );
    const catalog = loadModelCatalog(modelsFile);
    const gateway = new ModelGateway(catalog);
    try {
      await gateway.open(
        dir,
        standaloneCaller(catalog.resolve({ provider: "anthropic", id: "claude-3-5-haiku-20241022" }, "spec.model"), []),
      );
      const file = JSON.parse(readFileSync(join(dir, CONTROL_FILES.model), "utf8")) as { apiKey: string };
      assert.equal(file.apiKey, "sk-ant-oat-swarmd-gateway");
      const body = JSON.stringify({
        model: "x",
        stream: true,
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
      });
      const answer = await post(
        join(dir, CONTROL_FILES.modelSocket),
        `/u/${new URL(upstream.url).host}/v1/messages`,
        body,
        { authorization: "Bearer sk-ant-oat-swarmd-gateway" },
      );
      assert.equal(answer.status, 200);
      const call = upstream.calls.at(-1)!;
      assert.equal(call.headers.authorization, "Bearer sk-ant-oat01-daemon-token");
      assert.equal(call.headers["x-api-key"], undefined);
    } finally {
      await gateway.closeAll();
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
