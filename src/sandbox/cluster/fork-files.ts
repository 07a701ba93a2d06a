import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { SwarmError } from "../../errors.ts";
import { FORK_FILES, type ForkNote } from "../../harness/fork-session.ts";
import { HARNESS_USER } from "../docker/container-options.ts";
import { MAX_SESSION_BYTES } from "../work-tree.ts";
import { archiveOf } from "./archive-tree.ts";
import { within } from "./node-helpers.ts";
import { VOLUME_TARGETS } from "./sandbox-service.ts";
import { readContent, walkTar } from "./tar-read.ts";

/** The longest putting the fork files (a session of up to 64 MiB) into a child may take. */
const PUT_MS = 120_000;

/** Where pi keeps a sandbox's conversation (its harness's `agentDir` is `<control>/pi`). */
const SESSIONS = `${VOLUME_TARGETS.control}/pi/sessions`;

/**
 * The newest session file of a sandbox's conversation (the one its harness continues), read from
 * its container's archive of pi's session folder: only regular files named `*.jsonl` right in it
 * count (a link is passed over, never followed), newest by time (whole seconds in an archive; the
 * later name of two of the same second), at most `MAX_SESSION_BYTES` (`SNAPSHOT_FAILED` past it).
 * Only the newest one seen so far is held. Undefined when there is none (pi writes one once its
 * conversation holds an answer).
 */
export async function readNewestSession(container: Docker.Container, signal: AbortSignal): Promise<Buffer | undefined> {
  const archive = await archiveOf(container, SESSIONS, signal);
  if (!archive) return undefined;
  let newest: { name: string; at: number; content?: Buffer } | undefined;
  await walkTar(
    archive,
    async (header, content) => {
      const match = /^sessions\/([^/]+\.jsonl)$/.exec(header.name);
      if (!match || (header.type !== "file" && header.type !== "contiguous-file")) return "next";
      const name = match[1]!;
      const at = header.mtime?.getTime() ?? 0;
      if (newest && (at < newest.at || (at === newest.at && name < newest.name))) return "next";
      newest = { name, at };
      if ((header.size ?? 0) <= MAX_SESSION_BYTES) newest.content = await readContent(content, MAX_SESSION_BYTES);
      return "next";
    },
    signal,
  );
  if (newest && !newest.content)
    throw new SwarmError(
      "SNAPSHOT_FAILED",
      `its conversation (pi's session file) is larger than ${MAX_SESSION_BYTES} bytes, the most a fork copies`,
    );
  return newest?.content;
}

/**
 * A fork child's fork files (src/harness/fork-session.ts: `fork/fork.json`, the note, and
 * `fork/session.jsonl`, the fork point's conversation, streamed from `sessionFile`) put into its
 * control folder through its container's archive, the harness's (65533), private, before its
 * harness first starts. Its control folder is the harness's alone: the agent cannot have put a
 * link there.
 */
export async function putForkFiles(
  container: Docker.Container,
  note: ForkNote,
  sessionFile: string | undefined,
  signal: AbortSignal,
): Promise<void> {
  const tar = pack();
  const owner = { uid: HARNESS_USER.uid, gid: HARNESS_USER.gid, mtime: new Date() };
  const dir = FORK_FILES.dir;
  tar.entry({ ...owner, name: dir, type: "directory", mode: 0o700 });
  tar.entry({ ...owner, name: `${dir}/${FORK_FILES.note}`, type: "file", mode: 0o600 }, JSON.stringify(note));
  if (sessionFile === undefined) tar.finalize();
  else {
    const { size } = await stat(sessionFile);
    const sink = tar.entry(
      { ...owner, name: `${dir}/${FORK_FILES.session}`, type: "file", mode: 0o600, size },
      undefined,
      (err) => (err ? tar.destroy(err) : tar.finalize()),
    );
    const source = createReadStream(sessionFile);
    source.on("error", (err) => tar.destroy(err));
    source.pipe(sink);
  }
  await container.putArchive(tar, { path: VOLUME_TARGETS.control, abortSignal: within(signal, PUT_MS) });
}
