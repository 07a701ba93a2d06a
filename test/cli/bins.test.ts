import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import { tempDir } from "./helpers.ts";

const BINS = ["swarm", "swarmd", "swarmd-mcp"] as const;
const PINNED = /^NODE_VERSION=(.+)$/m.exec(readFileSync(join(SWARMD_ROOT, "scripts/node-pin.env"), "utf8"))?.[1];
const PINNED_NODE = join(SWARMD_ROOT, `.node/node-v${PINNED}/bin/node`);

describe("the bins run under swarmd's Node 24 whatever node the PATH holds", {
  // On a machine whose node is 24.x nothing is fetched into .node/, and a PATH holding a Node 20 first
  // would send scripts/node.sh to the registry: what is shown here is the machine this is not.
  skip: existsSync(PINNED_NODE) ? false : `the machine's node is 24.x, so .node/node-v${PINNED} was never fetched`,
}, () => {
  let dir: string;
  /** A PATH whose first `node` is a Node 20 that says so and refuses to run anything. */
  let path: string;
  /** Preloaded through NODE_OPTIONS: reports the node and script, then exits before the bin's own code. */
  let report: string;
  before(() => {
    dir = tempDir("swarm-bins-");
    const fake = join(dir, "node20");
    mkdirSync(fake);
    writeFileSync(
      join(fake, "node"),
      '#!/bin/sh\n[ "$1" = --version ] && { echo v20.20.2; exit 0; }\necho "the PATH\'s node 20 ran" >&2; exit 97\n',
    );
    chmodSync(join(fake, "node"), 0o755);
    path = `${fake}:/usr/local/bin:/usr/bin:/bin`;
    report = join(dir, "report.cjs");
    writeFileSync(
      report,
      "process.stdout.write(JSON.stringify({ version: process.version, execPath: process.execPath, script: process.argv[1] })); process.exit(0);\n",
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const launch = (file: string, args: string[] = []) => {
    const ran = spawnSync(file, args, {
      cwd: "/",
      env: { PATH: path, HOME: dir, NODE_OPTIONS: `--require ${report}` },
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(ran.status, 0, `${file}: exit ${ran.status ?? ran.signal}, ${ran.stderr}`);
    assert.equal(ran.stderr, "", "nothing said on stderr when the node is already there");
    return JSON.parse(ran.stdout) as { version: string; execPath: string; script: string };
  };

  it("started by their absolute path from another folder, as an MCP client's `command` does", () => {
    for (const bin of BINS) {
      const file = join(SWARMD_ROOT, "bin", `${bin}.js`);
      assert.deepEqual(launch(file, ["--help"]), {
        version: `v${PINNED}`,
        execPath: realpathSync(PINNED_NODE),
        script: realpathSync(file),
      });
    }
  });

  it("through the symlinks `make link` makes", () => {
    const prefix = join(dir, "prefix");
    const made = spawnSync("make", ["-s", "link", `PREFIX=${prefix}`], { cwd: SWARMD_ROOT, encoding: "utf8" });
    assert.equal(made.status, 0, made.stderr);
    for (const bin of BINS) {
      assert.deepEqual(launch(join(prefix, "bin", bin)), {
        version: `v${PINNED}`,
        execPath: realpathSync(PINNED_NODE),
        script: realpathSync(join(SWARMD_ROOT, "bin", `${bin}.js`)),
      });
    }
  });

  it("and the CLI works there: `swarm --help` answers with its usage", () => {
    const ran = spawnSync(join(SWARMD_ROOT, "bin/swarm.js"), ["--help"], {
      cwd: "/",
      env: { PATH: path, HOME: dir },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(ran.status, 0, ran.stderr);
    assert.match(ran.stdout, /^swarm: operate swarmd/);
    assert.doesNotMatch(ran.stderr, /node 20 ran/);
  });
});

describe("make link", () => {
  let dir: string;
  before(() => {
    dir = tempDir("swarm-link-");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const link = (prefix: string) =>
    spawnSync("make", ["-s", "link", `PREFIX=${prefix}`], {
      cwd: SWARMD_ROOT,
      encoding: "utf8",
      env: { ...process.env, PATH: `/usr/local/bin:/usr/bin:/bin` },
    });

  it("puts swarm, swarmd and swarmd-mcp into $(PREFIX)/bin, again harmlessly, and they answer from any folder", () => {
    const prefix = join(dir, "prefix");
    for (const time of ["first", "again"]) {
      const made = link(prefix);
      assert.equal(made.status, 0, `${time}: ${made.stderr}`);
      assert.match(made.stdout, new RegExp(`^linked swarm swarmd swarmd-mcp into ${prefix}/bin `));
      assert.match(made.stdout, new RegExp(`note: ${prefix}/bin is not on your PATH`));
    }
    assert.deepEqual(readdirSync(join(prefix, "bin")).sort(), [...BINS].sort());
    for (const bin of BINS)
      assert.equal(realpathSync(join(prefix, "bin", bin)), realpathSync(join(SWARMD_ROOT, "bin", `${bin}.js`)));
    const help = spawnSync("swarm", ["--help"], {
      cwd: "/",
      env: { PATH: `${join(prefix, "bin")}:/usr/bin:/bin`, HOME: dir },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^swarm: operate swarmd/);
  });

  it("says what to do when $(PREFIX)/bin cannot be made", () => {
    const blocked = join(dir, "a-file");
    writeFileSync(blocked, "");
    const made = link(blocked);
    assert.notEqual(made.status, 0);
    assert.match(
      made.stderr,
      new RegExp(
        `make link: cannot write ${blocked}/bin: run it with sudo, or choose a folder of yours: make link PREFIX=`,
      ),
    );
  });
});
