import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
