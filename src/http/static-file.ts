import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { FastifyReply, FastifyRequest } from "fastify";

/** A file the daemon serves from its installation (the docs page, the console), read once and kept. */
export interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

/** Files read on first request and kept, by path: they change only with the installation. */
export function staticFiles(): (path: string, type: string) => StaticFile {
  const files = new Map<string, StaticFile>();
  return (path, type) => {
    let file = files.get(path);
    if (file === undefined) {
      const body = readFileSync(path);
      file = { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
      files.set(path, file);
    }
    return file;
  };
}

/**
 * The file, or a 304 when the client holds this version. `no-cache` (the default) has clients
 * revalidate each time, so an upgrade shows at once; files named by their content may be `immutable`.
 */
export function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: StaticFile,
  cacheControl = "no-cache",
): FastifyReply {
  reply.header("cache-control", cacheControl).header("etag", file.etag).header("x-content-type-options", "nosniff");
  if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}
