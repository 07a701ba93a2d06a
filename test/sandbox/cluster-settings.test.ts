import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isSwarmError } from "../../src/errors.ts";
import { engineOptions, parseClusterNodes } from "../../src/sandbox/cluster/cluster-settings.ts";

/** How the cluster runtime reaches engines: the addresses it accepts, and which TLS files it uses for which node. */
describe("cluster engine settings", () => {
  const dir = mkdtempSync(join(tmpdir(), "swarmd-cluster-tls-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of ["ca.pem", "cert.pem", "key.pem"]) writeFileSync(join(dir, name), `shared ${name}`);
  mkdirSync(join(dir, "node-b"));
  for (const name of ["ca.pem", "cert.pem", "key.pem"]) writeFileSync(join(dir, "node-b", name), `own ${name}`);

  it("uses a node's own TLS folder when there is one, else the shared files", () => {
    const shared = engineOptions("tcp://10.0.0.2:2376", { tlsDir: dir }, "SWARM_CLUSTER_NODES (node-a)", "node-a");
    assert.equal(shared.protocol, "https");
    assert.equal(String(shared.cert), "shared cert.pem");
    const own = engineOptions("tcp://10.0.0.3:2376", { tlsDir: dir }, "SWARM_CLUSTER_NODES (node-b)", "node-b");
    assert.equal(String(own.key), "own key.pem");
    assert.equal(own.host, "10.0.0.3");
    assert.equal(own.port, 2376);
  });

  it("names a TLS file it cannot read, never its content", () => {
    const empty = mkdtempSync(join(tmpdir(), "swarmd-cluster-tls-empty-"));
    try {
      assert.throws(
        () => engineOptions("tcp://10.0.0.2:2376", { tlsDir: empty }, "SWARM_CLUSTER_MANAGER"),
        (err: unknown) => isSwarmError(err, "CONFIG_INVALID") && err.message.includes(join(empty, "ca.pem")),
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("takes unix:// and ssh:// addresses, and refuses others with the forms it takes", () => {
    assert.deepEqual(engineOptions("unix:///var/run/docker.sock", {}, "x"), { socketPath: "/var/run/docker.sock" });
    const ssh = engineOptions("ssh://swarmd@m1.example:2222", {}, "x");
    assert.equal(ssh.protocol, "ssh");
    assert.equal(ssh.username, "swarmd");
    assert.equal(ssh.port, 2222);
    assert.throws(
      () => engineOptions("http://m1:2375", {}, "SWARM_CLUSTER_MANAGER"),
      (err: unknown) => isSwarmError(err, "CONFIG_INVALID") && /unix:\/\/, tcp:\/\/ or ssh:\/\//.test(err.message),
    );
  });

  it("reads SWARM_CLUSTER_NODES as nodeId=address pairs", () => {
    assert.deepEqual(parseClusterNodes(" a=tcp://198.18.0.11:2376 , b=unix:///b.sock,"), {
      a: "tcp://198.18.0.11:2376",
      b: "unix:///b.sock",
    });
    assert.throws(
      () => parseClusterNodes("=tcp://x"),
      (err: unknown) => isSwarmError(err, "CONFIG_INVALID"),
    );
  });
});
