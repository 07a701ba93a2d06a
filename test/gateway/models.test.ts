import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";

describe("model catalogue (pi-ai's built-in models and the SWARM_MODELS file)", () => {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-models-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const refused = (code: "CONFIG_INVALID" | "INVALID_BODY", pattern: RegExp) => (err: unknown) =>
    isSwarmError(err, code) && pattern.test(err.message);

  it("finds built-in models and custom ones from the file, with their prices", () => {
    const catalog = loadModelCatalog(
      file(
        "ok.json",
        JSON.stringify({
          providers: {
            ollama: {
              baseUrl: "http://127.0.0.1:11434/v1",
              api: "openai-completions",
              apiKey: "ollama",
              models: [{ id: "qwen2.5-coder:7b" }],
            },
          },
        }),
      ),
    );
    assert.equal(
      catalog.resolve({ provider: "anthropic", id: "claude-3-5-haiku-20241022" }, "body.spec.model").cost.output,
      4,
    );
    const local = catalog.resolve({ provider: "ollama", id: "qwen2.5-coder:7b" }, "body.spec.model");
    assert.deepEqual(
      [local.api, local.baseUrl, local.cost.input],
      ["openai-completions", "http://127.0.0.1:11434/v1", 0],
    );
  });

  it("refuses an unknown model, a model on an API the gateway does not carry, and the scripted provider, naming the field", () => {
    const catalog = loadModelCatalog();
    assert.throws(
      () => catalog.resolve({ provider: "anthropic", id: "claude-none" }, "body.spec.model"),
      refused("INVALID_BODY", /^body\.spec\.model: unknown model anthropic\/claude-none/),
    );
    assert.throws(
      () => catalog.resolve({ provider: "nowhere", id: "m" }, "params.spec.model"),
      refused("INVALID_BODY", /^params\.spec\.model: unknown model/),
    );
    assert.throws(
      () => catalog.resolve({ provider: "google", id: "gemini-2.5-flash" }, "body.spec.model"),
      refused("INVALID_BODY", /google-generative-ai API, which the model gateway does not carry/),
    );
    assert.throws(
      () => catalog.resolve({ provider: "swarmd-script", id: "scripted" }, "body.spec.model"),
      refused("INVALID_BODY", /give a script instead/),
    );
  });

  it("names the closest models a spec may name beside an unknown one, by provider/id and by id alone", () => {
    const catalog = loadModelCatalog();
    const message = (provider: string, id: string) => {
      try {
        catalog.resolve({ provider, id }, "body.spec.model");
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
      return "resolved";
    };
    assert.match(
      message("anthropic", "claude-sonet-4-5"),
      /; closest: anthropic\/claude-sonnet-4-5, [^;]+ \(GET \/models lists them all\)$/,
    );
    assert.match(
      message("antropic", "claude-sonnet-4-5"),
      /closest: anthropic\/claude-sonnet-4-5,/,
      "a mistyped provider",
    );
    assert.match(message("anthropic", "gpt-4o"), /closest: .*\bopenai\/gpt-4o\b/, "a right id under another provider");
    assert.match(message("openai", "gpt5"), /closest: openai\/gpt-5,/);
    assert.match(message("nowhere", "m"), /in the models file\)$/, "nothing near: no list");
    assert.doesNotMatch(
      message("anthropic", "gemini-2.5-flax"),
      /google\//,
      "never a model the gateway does not carry",
    );
  });

  it("lists the models a spec may name, and where each key would come from, without reading a key or running a command", () => {
    const marker = join(dir, "command-ran");
    const catalog = loadModelCatalog(
      file(
        "keys.json",
        JSON.stringify({
          providers: {
            "by-env": {
              baseUrl: "http://127.0.0.1:9/v1",
              api: "openai-completions",
              apiKey: "SWARMD_TEST_LIST_KEY",
              models: [
                {
                  id: "m",
                  cost: { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 3 },
                  contextWindow: 1000,
                  maxTokens: 100,
                },
              ],
            },
            "by-file": {
              baseUrl: "http://127.0.0.1:9/v1",
              api: "openai-responses",
              apiKey: "literal-key-in-the-file",
              models: [{ id: "m" }],
            },
            "by-command": {
              baseUrl: "http://127.0.0.1:9/v1",
              api: "anthropic-messages",
              apiKey: `!touch ${marker} && echo key-from-a-command`,
              models: [{ id: "m" }],
            },
            "not-carried": {
              baseUrl: "http://127.0.0.1:9/v1",
              api: "google-generative-ai",
              apiKey: "k",
              models: [{ id: "m" }],
            },
          },
        }),
      ),
    );
    process.env.SWARMD_TEST_LIST_KEY = "from-the-environment";
    try {
      const listed = catalog.list();
      const byProvider = new Map(
        listed.filter((m) => m.provider.startsWith("by-") || m.provider === "not-carried").map((m) => [m.provider, m]),
      );
      assert.deepEqual(byProvider.get("by-env"), {
        provider: "by-env",
        id: "m",
        name: "m",
        api: "openai-completions",
        contextWindow: 1000,
        maxTokens: 100,
        cost: { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 3 },
        key: "env",
      });
      assert.deepEqual(
        ["by-file", "by-command", "not-carried"].map((p) => byProvider.get(p)?.key),
        ["file", "command", undefined],
      );
      assert.ok(listed.every((m) => ["anthropic-messages", "openai-completions", "openai-responses"].includes(m.api)));
      assert.ok(listed.some((m) => m.provider === "anthropic" && m.id === "claude-sonnet-4-5"));
      const order = listed.map((m) => [m.provider, m.id]);
      const sorted = [...order].sort(([pa = "", ia = ""], [pb = "", ib = ""]) =>
        pa === pb ? (ia < ib ? -1 : 1) : pa < pb ? -1 : 1,
      );
      assert.deepEqual(order, sorted, "by provider, then id");
      const text = JSON.stringify(listed);
      for (const secret of ["from-the-environment", "literal-key-in-the-file", "key-from-a-command", "touch"])
        assert.ok(!text.includes(secret), `${secret} is not in the list`);
      assert.equal(existsSync(marker), false, "the !command was not run");
    } finally {
      delete process.env.SWARMD_TEST_LIST_KEY;
    }
    assert.equal(
      catalog.list().find((m) => m.provider === "by-env")?.key,
      "file",
      "a variable that is not set is a literal key, as pi reads it",
    );
  });

  it("stops the daemon on a models file that is missing, not JSON, or not pi's schema", () => {
    assert.throws(
      () => loadModelCatalog(join(dir, "absent.json")),
      refused("CONFIG_INVALID", /SWARM_MODELS=.*absent\.json: no such file/),
    );
    assert.throws(
      () => loadModelCatalog(file("bad.json", "{ nope")),
      refused("CONFIG_INVALID", /SWARM_MODELS=.*Failed to parse/),
    );
    assert.throws(
      () => loadModelCatalog(file("schema.json", JSON.stringify({ providers: { x: { models: [{ id: 1 }] } } }))),
      refused("CONFIG_INVALID", /must be string/),
    );
    assert.throws(
      () =>
        loadModelCatalog(
          file(
            "nobase.json",
            JSON.stringify({ providers: { x: { api: "openai-completions", apiKey: "k", models: [{ id: "m" }] } } }),
          ),
        ),
      refused("CONFIG_INVALID", /"baseUrl" is required/),
    );
  });

  it("resolves a provider's key from the daemon's environment by the variable the file names, when the call is made", async () => {
    const catalog = loadModelCatalog(
      file(
        "env.json",
        JSON.stringify({
          providers: {
            local: {
              baseUrl: "http://127.0.0.1:9/v1",
              api: "openai-completions",
              apiKey: "SWARMD_TEST_LOCAL_KEY",
              models: [{ id: "m" }],
            },
          },
        }),
      ),
    );
    const model = catalog.resolve({ provider: "local", id: "m" }, "body.spec.model");
    process.env.SWARMD_TEST_LOCAL_KEY = "from-the-environment";
    try {
      assert.equal((await catalog.credentials(model)).apiKey, "from-the-environment");
    } finally {
      delete process.env.SWARMD_TEST_LOCAL_KEY;
    }
  });
});
