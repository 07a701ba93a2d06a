import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createSandboxEtc } from "../../src/sandbox/process/sandbox-etc.ts";

const root = mkdtempSync(join(tmpdir(), "swarmd-etc-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** A host /etc with listed files, a listed link, a folder holding a link and private keys, and files not listed. */
function hostEtc(name: string): string {
  const etc = join(root, name);
  mkdirSync(join(etc, "ssl", "certs"), { recursive: true });
  mkdirSync(join(etc, "ssl", "private"));
  writeFileSync(join(etc, "passwd"), "root:x:0:0:root:/root:/bin/bash\n");
  writeFileSync(join(etc, "shadow"), "root:$6$secret:19000:0:99999:7:::\n");
  writeFileSync(join(etc, "ssl", "private", "host.key"), "PRIVATE KEY");
  writeFileSync(join(etc, "ssl", "certs", "ca.pem"), "CERT");
  symlinkSync("/usr/share/ca-certificates/x.crt", join(etc, "ssl", "certs", "x.pem"));
  writeFileSync(join(root, `${name}-zone`), "UTC\n");
  symlinkSync(join(root, `${name}-zone`), join(etc, "timezone"));
  symlinkSync(join(root, "nowhere"), join(etc, "hosts"));
  writeFileSync(join(etc, "gitconfig"), "[user]\n");
  chmodSync(join(etc, "gitconfig"), 0o600);
  return etc;
}

describe("a sandbox's /etc", () => {
  it("holds the listed host files only: a listed link as what it points to, links inside a folder as links, no private keys", () => {
    const etc = createSandboxEtc({ dir: join(root, "copies-1"), hostEtc: hostEtc("host-1") });
    const copy = etc.current();
    assert.equal(readFileSync(join(copy, "passwd"), "utf8"), "root:x:0:0:root:/root:/bin/bash\n");
    assert.equal(existsSync(join(copy, "shadow")), false, "an unlisted file is not copied");
    assert.equal(existsSync(join(copy, "ssl", "private")), false, "private keys are left out");
    assert.equal(readFileSync(join(copy, "ssl", "certs", "ca.pem"), "utf8"), "CERT");
    assert.equal(readlinkSync(join(copy, "ssl", "certs", "x.pem")), "/usr/share/ca-certificates/x.crt");
    assert.ok(lstatSync(join(copy, "timezone")).isFile(), "a listed link is copied as its target");
    assert.equal(readFileSync(join(copy, "timezone"), "utf8"), "UTC\n");
    assert.equal(existsSync(join(copy, "hosts")), false, "a listed link to nothing is left out");
    assert.equal(lstatSync(join(copy, "gitconfig")).mode & 0o777, 0o600, "modes are kept");
  });

  it("makes a new copy when the host's files change, and keeps the old one as it was", () => {
    const host = hostEtc("host-2");
    const dir = join(root, "copies-2");
    const etc = createSandboxEtc({ dir, hostEtc: host, recheckMs: 0 });
    const first = etc.current();
    assert.equal(etc.current(), first, "nothing changed: the same copy");
    writeFileSync(join(host, "passwd"), "root:x:0:0:root:/root:/bin/bash\nagent:x:1000:1000::/work:/bin/sh\n");
    const second = etc.current();
    assert.notEqual(second, first);
    assert.match(readFileSync(join(second, "passwd"), "utf8"), /^agent:/m);
    assert.doesNotMatch(readFileSync(join(first, "passwd"), "utf8"), /^agent:/m, "a live sandbox's /etc is left alone");
    // The same files again (a daemon's restart, or a change undone): the copy made for them.
    writeFileSync(join(host, "passwd"), "root:x:0:0:root:/root:/bin/bash\n");
    assert.equal(createSandboxEtc({ dir, hostEtc: host }).current(), first);
  });

  it("removes a copy a crash left half made", () => {
    const dir = join(root, "copies-3");
    mkdirSync(join(dir, "0123.abcd.tmp"), { recursive: true });
    createSandboxEtc({ dir, hostEtc: hostEtc("host-3") });
    assert.equal(existsSync(join(dir, "0123.abcd.tmp")), false);
  });
});
