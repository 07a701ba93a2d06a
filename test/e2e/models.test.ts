/**
 * `GET /models`, `swarm models` and the bridge's `swarm_list_models` against a live daemon with a
 * models file: the models a spec may name, where each key would come from (the daemon's
 * environment, a literal key in the file, a `!command`, or none), and never a key, a command's
 * output or a trace of the command having run. An unknown model's 400 names the closest ones.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { type Bridge, startBridge } from "../bridge/bridge-client.ts";
import { type SwarmRun, swarm, tempDir } from "../cli/helpers.ts";
import { type Daemon, type Json, startDaemon } from "../support/daemon.ts";

const ENV_KEY = `env-secret-${process.pid}-value`;
const GROQ_KEY = `groq-secret-${process.pid}-value`;
const FILE_KEY = `file-secret-${process.pid}-value`;
const COMMAND_KEY = `command-secret-${process.pid}-value`;
const SECRETS = [ENV_KEY, GROQ_KEY, FILE_KEY, COMMAND_KEY];
/** Variables of the daemon's environment this suite sets or clears (the daemon runs in this process). */
const VARIABLES = ["SWARMD_E2E_MODELS_KEY", "GROQ_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"];

describe("the models a spec may name, over HTTP, the CLI and the bridge", () => {
  let d: Daemon;
  let dir: string;
  let marker: string;
  let env: Record<string, string>;
  let bridge: Bridge;
  const saved = new Map(VARIABLES.map((name) => [name, process.env[name]]));
  const noSecret = (text: string, where: string) => {
    for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} shows a key`);
    assert.ok(!text.includes("touch "), `${where} shows the command`);
  };

  before(async () => {
    dir = tempDir("swarmd-models-e2e-");
    marker = join(dir, "the-command-ran");
    const local = (api: string, apiKey: string) => ({
      baseUrl: "http://127.0.0.1:9/v1",
      api,
      apiKey,
      models: [{ id: "coder-1", name: "Local coder", contextWindow: 32_000, maxTokens: 4_000 }],
    });
    const file = join(dir, "models.json");
    writeFileSync(
      file,
      JSON.stringify({
        providers: {
          "local-env": local("openai-completions", "SWARMD_E2E_MODELS_KEY"),
          "local-file": local("openai-responses", FILE_KEY),
          "local-cmd": local("anthropic-messages", `!touch ${marker} && echo ${COMMAND_KEY}`),
          "local-gemini": local("google-generative-ai", FILE_KEY),
        },
      }),
    );
    for (const name of VARIABLES) delete process.env[name];
    process.env.SWARMD_E2E_MODELS_KEY = ENV_KEY;
    process.env.GROQ_API_KEY = GROQ_KEY;
    d = await startDaemon({ gateway: new ModelGateway(loadModelCatalog(file)) });
    env = { SWARM_URL: d.url, SWARM_SPECS_DIR: join(dir, "specs") };
    bridge = await startBridge(env);
  });
  after(async () => {
    await bridge?.close();
    await d?.stop();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("GET /models: every model a spec may name, its limits and prices, and where its key would come from", async () => {
    const answer = await d.call("GET", "/models");
    assert.equal(answer.status, 200);
    const models = answer.body.models as Json[];
    const find = (provider: string, id: string) => models.find((m) => m.provider === provider && m.id === id);
    assert.deepEqual(find("local-env", "coder-1"), {
      provider: "local-env",
      id: "coder-1",
      name: "Local coder",
      api: "openai-completions",
      contextWindow: 32_000,
      maxTokens: 4_000,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      key: "env",
    });
    assert.deepEqual(
      ["local-file", "local-cmd", "local-gemini"].map((provider) => find(provider, "coder-1")?.key),
      ["file", "command", undefined],
      "a model on an API the gateway does not carry is not one a spec may name",
    );
    const sonnet = find("anthropic", "claude-sonnet-4-5");
    assert.equal(sonnet?.key, "none", "no Anthropic key in the daemon's environment");
    assert.equal(sonnet?.api, "anthropic-messages");
    assert.ok(sonnet.cost.output > 0 && sonnet.contextWindow > 0);
    assert.ok(
      models.filter((m) => m.provider === "groq").every((m) => m.key === "env"),
      "GROQ_API_KEY: pi-ai's variable",
    );
    assert.ok(!models.some((m) => m.provider === "google" || m.provider === "swarmd-script"));
    noSecret(JSON.stringify(answer.body), "GET /models");
    assert.equal(existsSync(marker), false, "the models file's !command was not run");

    // Every one listed is one a spec may name: the daemon takes a sample of them in a run. (Not the
    // command's: its gateway would run the command when it opens, as spec section 2.7 says.)
    for (const model of [find("local-file", "coder-1"), sonnet, models.find((m) => m.provider === "groq")]) {
      const created = await d.call("POST", "/runs", {
        spec: { name: "named", model: { provider: model.provider, id: model.id } },
      });
      assert.equal(created.status, 202, JSON.stringify(created.body));
      await d.call("DELETE", `/runs/${created.body.runId}?purge=true`);
    }
    assert.equal(existsSync(marker), false, "nor by a run that made no model call");

    const anthropic = (await d.call("GET", "/models?provider=anthropic")).body.models as Json[];
    assert.ok(anthropic.length > 5 && anthropic.every((m) => m.provider === "anthropic"));
    const available = (await d.call("GET", "/models?available=true")).body.models as Json[];
    assert.deepEqual([...new Set(available.map((m) => m.provider))].sort(), [
      "groq",
      "local-cmd",
      "local-env",
      "local-file",
    ]);
    assert.deepEqual((await d.call("GET", "/models?provider=nowhere")).body, { models: [] });
    const bad = await d.call("GET", "/models?available=yes");
    assert.deepEqual([bad.status, bad.body], [400, { error: 'query.available: must be "true" or "false"' }]);
  });

  it("an unknown model is a 400 naming the closest ones, on POST /runs and on a spawn", async () => {
    const typo = await d.call("POST", "/runs", {
      spec: { name: "typo", model: { provider: "anthropic", id: "claude-sonet-4-5" } },
    });
    assert.equal(typo.status, 400);
    assert.match(
      typo.body.error,
      /^body\.spec\.model: unknown model anthropic\/claude-sonet-4-5 \(.*\); closest: anthropic\/claude-sonnet-4-5, /,
    );
    const local = await d.call("POST", "/runs", {
      spec: { name: "typo", model: { provider: "local-env", id: "coder-2" } },
    });
    assert.match(local.body.error, /closest: local-env\/coder-1\b/, "the models file's models too");

    const root = (await d.call("POST", "/runs", { spec: { name: "root", script: [] }, keepAlive: true })).body;
    const spawn = await d.call("POST", `/runs/${root.runId}/agents`, {
      parentAgentId: root.rootAgentId,
      spec: { name: "kid", model: { provider: "openai", id: "gpt5" } },
    });
    assert.equal(spawn.status, 400);
    assert.match(spawn.body.error, /^body\.spec\.model: unknown model openai\/gpt5 .*; closest: openai\/gpt-5\b/);
    await d.call("DELETE", `/runs/${root.runId}?purge=true`);

    const cli = await swarm(
      ["run", "-"],
      env,
      JSON.stringify({ name: "typo", model: { provider: "antropic", id: "claude-sonnet-4-5" } }),
    );
    assert.equal(cli.code, 1);
    assert.match(
      cli.stderr,
      /^swarm: service error 400: body\.spec\.model: unknown model antropic\/claude-sonnet-4-5 .*closest: anthropic\/claude-sonnet-4-5/,
    );
  });

  it("swarm models: a table, a filter, --provider, --available, and --json as the service answers (through a pipe, in full)", async () => {
    const all = (await d.call("GET", "/models")).body;
    const json = await swarmReadLate(["models", "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    assert.ok(json.stdout.length > 100_000, `${json.stdout.length} characters: more than a pipe holds`);
    assert.deepEqual(JSON.parse(json.stdout), all, "the whole answer, though the reader came late");

    const table = await swarm(["models", "coder", "--available"], env);
    assert.equal(table.code, 0, table.stderr);
    assert.deepEqual(
      table.stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(/\s{2,}/)),
      [
        ["MODEL (provider/id)", "NAME", "API", "CONTEXT", "OUTPUT", "$/M IN/OUT", "KEY"],
        ["local-cmd/coder-1", "Local coder", "anthropic-messages", "32k", "4k", "$0/$0", "command"],
        ["local-env/coder-1", "Local coder", "openai-completions", "32k", "4k", "$0/$0", "env"],
        ["local-file/coder-1", "Local coder", "openai-responses", "32k", "4k", "$0/$0", "file"],
      ],
    );
    const sonnet = await swarm(["models", "sonnet-4-5", "--provider", "anthropic"], env);
    assert.match(
      sonnet.stdout,
      /^anthropic\/claude-sonnet-4-5 +Claude Sonnet 4\.5.* +anthropic-messages +200k +64k +\$3\/\$15 +none$/m,
    );
    const none = await swarm(["models", "nothing-like-this"], env);
    assert.deepEqual([none.code, none.stdout, none.stderr], [0, "", 'no models matching "nothing-like-this"\n']);
    const typo = await swarm(["models", "--availble"], env);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /^swarm: unknown option --availble; did you mean --available\?\nusage: swarm models/);
    for (const run of [json, table, sonnet]) noSecret(run.stdout + run.stderr, "swarm models");
    assert.equal(existsSync(marker), false);
  });

  it("swarm_list_models: the route's list, narrowed by provider and key, in the bridge's words", async () => {
    const answer = await bridge.tool("swarm_list_models", { provider: "local-cmd" });
    assert.equal(answer.isError, false, answer.text);
    assert.deepEqual(answer.data.models, (await d.call("GET", "/models?provider=local-cmd")).body.models);
    assert.match(answer.text, /^1 model\(s\) of local-cmd a spec may name, 1 with a key; /);
    const available = await bridge.tool("swarm_list_models", { available: true });
    assert.deepEqual(available.data.models, (await d.call("GET", "/models?available=true")).body.models);
    const everything = await bridge.tool("swarm_list_models");
    assert.ok(everything.data.models.length > 100);
    for (const got of [answer, available, everything])
      noSecret(got.text + JSON.stringify(got.data), "swarm_list_models");
    assert.equal(existsSync(marker), false);
  });
});

/**
 * The real `swarm` bin writing into a shell pipe whose reader starts only after a while, as a slow
 * pipe (`| less`, a busy script) does: the CLI must not exit before the pipe took all it wrote.
 */
function swarmReadLate(args: string[], env: Record<string, string>): Promise<SwarmRun> {
  return new Promise((resolve, reject) => {
    execFile(
      "bash",
      ["-c", 'set -o pipefail; "$0" "$@" | { sleep 2; cat; }', join(SWARMD_ROOT, "bin/swarm.js"), ...args],
      { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env }, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err && typeof err.code === "number" ? err.code : err ? -1 : 0;
        if (code === -1) reject(err);
        else resolve({ code, stdout, stderr });
      },
    );
  });
}
