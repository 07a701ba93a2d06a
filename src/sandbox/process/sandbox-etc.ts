import { createHash, randomBytes } from "node:crypto";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
} from "node:fs";
import { join, relative } from "node:path";

/**
 * What of /etc programs need (loader cache, users, name resolution, certificates, time zone),
 * and no more: the agent has no business reading the host's /etc/shadow or ssh keys.
 */
export const ETC_FILES = [
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "alternatives",
  "passwd",
  "group",
  "hosts",
  "host.conf",
  "resolv.conf",
  "nsswitch.conf",
  "gai.conf",
  "ssl",
  "ca-certificates",
  "pki",
  "localtime",
  "timezone",
  "os-release",
  "mime.types",
  "bash.bashrc",
  "profile",
  "inputrc",
  "gitconfig",
];

/** Left out even under a listed folder: private keys (Debian's /etc/ssl/private). */
const LEFT_OUT = new Set(["ssl/private", "pki/tls/private"]);

/** How often, at most, the host's files are looked at again for a change. */
const RECHECK_MS = 2_000;

export interface SandboxEtcOptions {
  /** Where the copies are kept (`<dataDir>/etc`). */
  dir: string;
  /** The host's /etc (a test's folder in tests). */
  hostEtc?: string;
  recheckMs?: number;
}

export interface SandboxEtc {
  /** The folder to bind as a sandbox's /etc: a copy of the host's `ETC_FILES` as they are now. */
  current(): string;
}

/**
 * The /etc a sandbox sees: the host's `ETC_FILES` copied into one folder, bound read-only as a
 * whole. bwrap reads the whole mount table again for each mount it makes, so one bind per file
 * (21 here) was most of its own cost: about 17 ms of CPU per sandbox start, 10 ms with one bind.
 * A copy is named by what it holds: the host's files changing (a new resolv.conf, a user, a
 * certificate) make a new copy for the sandboxes started after it, as Docker copies resolv.conf
 * and hosts into a container when it makes it. A copy is never changed or removed while the daemon
 * runs: a live sandbox's /etc is bound to it. A listed entry that is a symlink is copied as what it
 * points to (a bind followed it too); links inside a listed folder stay links.
 */
export function createSandboxEtc(options: SandboxEtcOptions): SandboxEtc {
  const hostEtc = options.hostEtc ?? "/etc";
  const recheckMs = options.recheckMs ?? RECHECK_MS;
  // A copy a crash interrupted was never bound: it goes.
  for (const name of existsSync(options.dir) ? readdirSync(options.dir) : [])
    if (name.endsWith(".tmp")) rmSync(join(options.dir, name), { recursive: true, force: true });
  let seen: { at: number; metadata: string; copy: string } | undefined;

  return {
    current() {
      const now = Date.now();
      if (seen && now - seen.at < recheckMs) return seen.copy;
      const entries = listed(hostEtc);
      const metadata = entries.map(describe).join("\n");
      if (seen?.metadata === metadata) {
        seen.at = now;
        return seen.copy;
      }
      const copy = join(options.dir, contentHash(entries));
      if (!existsSync(copy)) makeCopy(entries, options.dir, copy);
      seen = { at: now, metadata, copy };
      return copy;
    },
  };
}

/** One host entry to copy: its path, where it goes, and the host file it was read from. */
interface Entry {
  /** Path under the copy (`ssl/certs/x.pem`). */
  name: string;
  /** The host path read (a listed symlink's target). */
  source: string;
}

/** Every file, folder and inner link the copy holds, in a stable order. */
function listed(hostEtc: string): Entry[] {
  const entries: Entry[] = [];
  const walk = (name: string, source: string) => {
    if (LEFT_OUT.has(name)) return;
    entries.push({ name, source });
    if (!lstatSync(source).isDirectory()) return;
    for (const child of readdirSync(source).sort()) walk(`${name}/${child}`, join(source, child));
  };
  for (const name of ETC_FILES) {
    let source: string;
    try {
      source = realpathSync(join(hostEtc, name));
    } catch {
      continue; // missing, or a link to nothing: left out, as `--ro-bind-try` did
    }
    walk(name, source);
  }
  return entries;
}

function describe({ name, source }: Entry): string {
  const s = lstatSync(source, { bigint: true });
  return `${name} ${source} ${s.mode} ${s.size} ${s.mtimeNs} ${s.ctimeNs} ${s.ino}`;
}

/** A name for what the entries hold: their kinds, modes, link targets and contents. */
function contentHash(entries: readonly Entry[]): string {
  const hash = createHash("sha256");
  for (const { name, source } of entries) {
    const s = lstatSync(source);
    hash.update(`${name}\0${s.mode}\0`);
    if (s.isSymbolicLink()) hash.update(readlinkSync(source));
    else if (s.isFile()) hash.update(readFileSync(source));
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 32);
}

/** Copy the entries into a new folder, then rename it into place, so no sandbox binds a half-made copy. */
function makeCopy(entries: readonly Entry[], dir: string, copy: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const making = `${copy}.${randomBytes(4).toString("hex")}.tmp`;
  mkdirSync(making, { mode: 0o755 });
  try {
    const tops = entries.filter((e) => !e.name.includes("/"));
    for (const top of tops) {
      cpSync(top.source, join(making, top.name), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (src) => !LEFT_OUT.has(`${top.name}/${relative(top.source, src)}`),
      });
    }
    renameSync(making, copy);
  } catch (err) {
    rmSync(making, { recursive: true, force: true });
    // Another start made the same copy meanwhile: it holds the same files.
    if (!existsSync(copy)) throw err;
  }
}
