import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

/**
 * Reading files a sandbox can reach (its control folder is mounted writable inside it). The agent
 * may have swapped any of them for a symlink to a host file, a FIFO that blocks the opener forever,
 * a device, or a file of any size. So: no link is followed (`O_NOFOLLOW`: ELOOP), the open never
 * waits for a writer (`O_NONBLOCK`), only a regular file is read (`ENOTREG` otherwise), and at most
 * `maxBytes` (`EFBIG` above, for a whole-file read). Errors keep the `code` of `fs` errors (ENOENT
 * for a missing file), so callers can tell "absent" from "refused".
 */
const FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** The whole file, when it is a regular file of at most `maxBytes`. */
export async function readControlFile(path: string, maxBytes: number): Promise<Buffer> {
  return withRegularFile(path, async (handle, size) => {
    refuseOver(path, size, maxBytes);
    return readAt(handle, 0, size);
  });
}

/**
 * `readControlFile` in one turn of the event loop, for a small file on a path that must not wait
 * (a control's sandbox record): each await of a thread-pool read waits behind whatever else the
 * daemon's loop and thread pool are doing, which under a burst of starts is tens of milliseconds.
 */
export function readControlFileSync(path: string, maxBytes: number): Buffer {
  const fd = openSync(path, FLAGS);
  try {
    const { size } = regular(path, fstatSync(fd));
    refuseOver(path, size, maxBytes);
    const buffer = Buffer.alloc(size);
    let done = 0;
    while (done < size) {
      const bytesRead = readSync(fd, buffer, done, size - done, done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return buffer.subarray(0, done);
  } finally {
    closeSync(fd);
  }
}

/** The last `maxBytes` (or fewer) of a regular file. */
export async function tailControlFile(path: string, maxBytes: number): Promise<Buffer> {
  return withRegularFile(path, (handle, size) => {
    const start = Math.max(0, size - maxBytes);
    return readAt(handle, start, size - start);
  });
}

async function withRegularFile<T>(path: string, read: (handle: FileHandle, size: number) => Promise<T>): Promise<T> {
  const handle = await open(path, FLAGS);
  try {
    const { size } = regular(path, await handle.stat());
    return await read(handle, size);
  } finally {
    await handle.close();
  }
}

/** Read what is there; a file that shrank meanwhile gives fewer bytes, one that grew gives no more. */
async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

function regular(path: string, stat: Stats): Stats {
  if (!stat.isFile()) throw refused("ENOTREG", `${path} is not a regular file`);
  return stat;
}

function refuseOver(path: string, size: number, maxBytes: number): void {
  if (size > maxBytes) throw refused("EFBIG", `${path} is ${size} bytes, more than ${maxBytes}`);
}

function refused(code: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(message);
  err.code = code;
  return err;
}

/** True for the errors `readControlFile` / `tailControlFile` raise on a file that is there but not acceptable. */
export function isRefusedControlFile(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ELOOP" || code === "ENOTREG" || code === "EFBIG";
}
