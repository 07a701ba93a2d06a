import type Docker from "dockerode";
import type { Headers } from "tar-stream";
import { SwarmError } from "../../errors.ts";
import { engineStatus } from "../docker/engine.ts";
import { MAX_TREE_ENTRIES } from "../host/host-tree.ts";
import { type EntryKind, isPlainRelativePath, type TreeEntry, type WorkTree } from "../work-tree.ts";
import { bounded, ENGINE_CALL_MS, quick } from "./node-helpers.ts";
import { VOLUME_TARGETS } from "./sandbox-service.ts";
import { readContent, walkTar } from "./tar-read.ts";

const ROOT = VOLUME_TARGETS.work;
/** What a name holds in its place when it is not UTF-8: an engine's archive cannot say more (see `archiveTree`). */
const NOT_UTF8 = "\uFFFD";

/** What a path of a container is, as the engine's archive stat (`lstat`: a link is a link) tells. */
export type PathKind = "dir" | "file" | "symlink" | "other" | "missing";

/** Bits of Go's `os.FileMode`, which the engine's stat answers in: its type bits sit above the permissions. */
const GO_MODE = { dir: 31, symlink: 27, device: 26, namedPipe: 25, socket: 24, charDevice: 21, irregular: 19 };
const hasBit = (mode: number, bit: number) => Math.floor(mode / 2 ** bit) % 2 === 1;

/**
 * `HEAD /containers/{id}/archive?path=`: what `path` is in the container, never following it when
 * it is a link (the engine follows links in the folders above it, so a caller checks those first).
 */
export async function statPath(container: Docker.Container, path: string): Promise<PathKind> {
  let response: NodeJS.ReadableStream & { headers?: Record<string, string | undefined>; destroy?: () => void };
  try {
    response = await container.infoArchive({ path, abortSignal: quick() });
  } catch (err) {
    if (engineStatus(err) === 404) return "missing";
    throw err;
  }
  response.destroy?.();
  const header = response.headers?.["x-docker-container-path-stat"];
  if (!header) throw new Error(`the node's engine gave no stat of ${path}`);
  const { mode } = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as { mode: number };
  if (hasBit(mode, GO_MODE.symlink)) return "symlink";
  if (hasBit(mode, GO_MODE.dir)) return "dir";
  const special = [GO_MODE.device, GO_MODE.namedPipe, GO_MODE.socket, GO_MODE.charDevice, GO_MODE.irregular];
  return special.some((bit) => hasBit(mode, bit)) ? "other" : "file";
}

/** A container's archive of `path` (a stream of tar), or undefined when there is no such path. */
export async function archiveOf(
  container: Docker.Container,
  path: string,
  signal: AbortSignal,
): Promise<NodeJS.ReadableStream | undefined> {
  try {
    return await bounded(
      container.getArchive({ path, abortSignal: signal }) as Promise<NodeJS.ReadableStream>,
      ENGINE_CALL_MS,
      (late) => (late as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.(),
    );
  } catch (err) {
    if (engineStatus(err) === 404) return undefined;
    throw err;
  }
}

/**
 * A `/work` read through a container that mounts it there (a helper that mounts only that
 * volume: a link in it leads nowhere but the image's own files), as a `WorkTree`.
 *
 * `entries` streams the archive of /work and keeps its headers only (the contents cross the
 * network and are dropped): the engine writes an archive without following links, and names its
 * entries `work/...`. Those names are hostile: one that does not come out as a plain relative
 * path below /work fails the listing. An engine's archive holds times to the second, so `mtimeMs`
 * is whole seconds here. A name that is not UTF-8 reaches swarmd with U+FFFD in its place
 * (Docker writes it in a PAX record): listed `unsupported`, not descended into.
 *
 * `read` checks every folder of the path first (`HEAD` stat: a folder, not a link; the engine
 * would follow one), then takes the archive of that one path, whose entry must be a regular file
 * (a link `ELOOP`, anything else `ENOTREG`) of at most `maxBytes` (`EFBIG`). A tree nothing writes
 * meanwhile (`frozen`: a fork point, a closed child's kept /work) checks each folder once.
 */
export function archiveTree(container: Docker.Container, frozen: boolean, release: () => Promise<void>): WorkTree {
  const folders = new Set<string>();
  let closed = false;

  const checkFolder = async (folder: string) => {
    if (frozen && folders.has(folder)) return;
    const kind = await statPath(container, `${ROOT}/${folder}`);
    if (kind === "missing") throw errno("ENOENT", `${folder} does not exist`);
    if (kind === "symlink") throw errno("ELOOP", `${folder} is a link`);
    if (kind !== "dir") throw errno("ENOTDIR", `${folder} is not a folder`);
    folders.add(folder);
  };

  return {
    async entries(signal) {
      if (closed) throw new Error("the tree was closed");
      const archive = await archiveOf(container, ROOT, signal);
      if (!archive) throw new SwarmError("INTERNAL", "the node's engine has no /work for this tree");
      const entries: TreeEntry[] = [];
      const files = new Map<string, TreeEntry>();
      await walkTar(
        archive,
        async (header) => {
          const path = pathBelow(header.name);
          if (path === "") return "next";
          if (path === undefined)
            throw new SwarmError(
              "INTERNAL",
              `the archive of /work held an entry outside it: ${JSON.stringify(header.name.slice(0, 200))}`,
            );
          // Below a folder whose name is not UTF-8: not descended into, as on the other runtimes.
          if (path.slice(0, Math.max(0, path.lastIndexOf("/"))).includes(NOT_UTF8)) return "next";
          if (entries.length >= MAX_TREE_ENTRIES)
            throw new SwarmError(
              "TREE_TOO_LARGE",
              `/work holds more than ${MAX_TREE_ENTRIES} entries: too many to compare`,
            );
          const entry = entryOf(header, path, files);
          entries.push(entry);
          if (entry.kind === "file") files.set(path, entry);
          return "next";
        },
        signal,
      );
      return entries;
    },

    async read(path, maxBytes, signal) {
      signal.throwIfAborted();
      if (closed) throw new Error("the tree was closed");
      if (!isPlainRelativePath(path)) throw errno("ENOENT", `not a plain path: ${path}`);
      const segments = path.split("/");
      for (let i = 1; i < segments.length; i++) await checkFolder(segments.slice(0, i).join("/"));
      const archive = await archiveOf(container, `${ROOT}/${path}`, signal);
      if (!archive) throw errno("ENOENT", `${path} does not exist`);
      let content: Buffer | undefined;
      await walkTar(
        archive,
        async (header, stream) => {
          if (header.type === "symlink") throw errno("ELOOP", `${path} is a link`);
          if (header.type !== "file" && header.type !== "contiguous-file")
            throw errno("ENOTREG", `${path} is not a regular file`);
          if ((header.size ?? 0) > maxBytes)
            throw errno("EFBIG", `${path} is ${header.size} bytes, more than ${maxBytes}`);
          content = await readContent(stream, maxBytes);
          return "stop";
        },
        signal,
      );
      if (!content) throw errno("ENOENT", `${path} does not exist`);
      return content;
    },

    async close() {
      if (closed) return;
      closed = true;
      await release();
    },
  };
}

/** The path below /work an archive entry names (`work/a/b/` → `a/b`, `work/` → ``); undefined when it is not a plain one below /work. */
function pathBelow(name: string): string | undefined {
  const prefix = `${ROOT.slice(1)}/`;
  if (name === ROOT.slice(1) || name === prefix) return "";
  if (!name.startsWith(prefix)) return undefined;
  const path = name.slice(prefix.length).replace(/\/$/, "");
  return isPlainRelativePath(path) ? path : undefined;
}

function entryOf(header: Headers, path: string, files: Map<string, TreeEntry>): TreeEntry {
  const base: Omit<TreeEntry, "kind" | "size"> = {
    path,
    mode: (header.mode ?? 0) & 0o7777,
    mtimeMs: header.mtime?.getTime() ?? 0,
  };
  const kind: EntryKind =
    header.type === "file" || header.type === "contiguous-file" || header.type === "link"
      ? "file"
      : header.type === "directory"
        ? "dir"
        : header.type === "symlink"
          ? "symlink"
          : "other";
  const entry: TreeEntry = { ...base, kind, size: kind === "file" ? (header.size ?? 0) : 0 };
  if (header.type === "link") {
    // A second name of a file already in the archive: its size is that file's.
    const first = files.get(pathBelow(header.linkname ?? "") ?? "");
    if (first) Object.assign(entry, { size: first.size, mode: first.mode, mtimeMs: first.mtimeMs });
  }
  if (kind === "symlink") {
    const target = header.linkname ?? "";
    entry.size = Buffer.byteLength(target);
    if (target.includes(NOT_UTF8)) entry.unsupported = "its link target is not UTF-8";
    else entry.linkTarget = target;
  }
  if (path.slice(path.lastIndexOf("/") + 1).includes(NOT_UTF8)) entry.unsupported = "its name is not UTF-8";
  return entry;
}

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}
