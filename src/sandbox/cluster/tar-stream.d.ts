/**
 * The part of tar-stream 2.x (no types of its own) that the cluster runtime uses: reading the
 * archives a node's engine sends (`GET /containers/{id}/archive`) and packing the ones it puts.
 */
declare module "tar-stream" {
  import type { Readable, Writable } from "node:stream";

  export type EntryType =
    | "file"
    | "link"
    | "symlink"
    | "character-device"
    | "block-device"
    | "directory"
    | "fifo"
    | "contiguous-file"
    | "pax-header"
    | "pax-global-header"
    | "gnu-long-link-path"
    | "gnu-long-path";

  export interface Headers {
    name: string;
    size?: number;
    /** Permission bits; on what extract gives, the file type's bits too. */
    mode?: number;
    mtime?: Date;
    type?: EntryType | null;
    linkname?: string | null;
    uid?: number;
    gid?: number;
    uname?: string;
    gname?: string;
    pax?: Record<string, string> | null;
  }

  export type Extract = Writable & {
    on(event: "entry", listener: (header: Headers, stream: Readable, next: (err?: unknown) => void) => void): Extract;
    on(event: "finish" | "close", listener: () => void): Extract;
    on(event: "error", listener: (err: Error) => void): Extract;
  };

  export type Pack = Readable & {
    /** An entry whose content is `content`; without it, the returned stream takes the content (`size` bytes). */
    entry(header: Headers, content?: string | Buffer, callback?: (err?: Error | null) => void): Writable;
    finalize(): void;
  };

  export function extract(options?: { filenameEncoding?: string; allowUnknownFormat?: boolean }): Extract;
  export function pack(): Pack;
}
