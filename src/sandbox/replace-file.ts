import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { open, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

/** Who a file is to belong to. */
export interface FileOwner {
  uid: number;
  gid: number;
}

/** A new file only: never one that is there, never through a link (`O_EXCL` with `O_NOFOLLOW`). */
const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Put `content` at `path` in a folder someone else can write (a sandbox's): written to a new name
 * beside it, given `owner` and `mode`, then renamed over what was there. A link or a hard link
 * planted at `path` is replaced, never written through; a crash leaves the old file or the new one.
 */
export async function replaceFile(
  path: string,
  content: string | Uint8Array,
  mode: number,
  owner?: FileOwner,
): Promise<void> {
  const temporary = join(dirname(path), `.swarmd-${randomUUID()}`);
  const handle = await open(temporary, CREATE, 0o600);
  try {
    await handle.writeFile(content);
    if (owner) await handle.chown(owner.uid, owner.gid);
    await handle.chmod(mode & 0o777);
  } catch (err) {
    await unlink(temporary).catch(() => undefined);
    throw err;
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
