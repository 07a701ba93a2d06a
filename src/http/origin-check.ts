import type { FastifyRequest } from "fastify";
import { SwarmError } from "../errors.ts";
import { hostPort, servedNames } from "./host-check.ts";

/** Longest part of a refused Origin header quoted back in the message. */
const QUOTE_LIMIT = 200;

/**
 * An `onRequest` hook for `/mcp`, after the Host check: a request with an `Origin` header is
 * answered only when that origin is the daemon's own, the MCP Streamable HTTP transport's rule
 * against DNS rebinding. The daemon's own origin: scheme `http`, a name the Host check serves
 * (loopback, SWARM_HOST, SWARM_ALLOWED_HOSTS) and the port the request was sent to (its Host
 * header's, 80 when it names none). A page on another local port, a page whose name was pointed
 * at the daemon, an `https` page (the daemon speaks plain http) and `Origin: null` are refused
 * with 403. MCP clients that are not browsers send no Origin and are not affected.
 */
export function originCheck(names: readonly string[] = []): (request: FastifyRequest) => Promise<void> {
  const allowed = servedNames(names);
  return async (request) => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (isOwnOrigin(origin, request.headers.host ?? "", allowed)) return;
    const quoted = JSON.stringify(origin.length > QUOTE_LIMIT ? `${origin.slice(0, QUOTE_LIMIT)}…` : origin);
    throw new SwarmError(
      "ORIGIN_NOT_ALLOWED",
      `Origin ${quoted} is not the daemon's own: a page may call /mcp only from http://, a name the daemon serves and the port the request is sent to.`,
    );
  };
}

function isOwnOrigin(origin: string, host: string, allowed: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed frame, a file), or not an origin at all
  }
  // An origin is `scheme://host[:port]` and nothing else.
  if (url.protocol !== "http:" || url.origin !== origin.toLowerCase()) return false;
  const name = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const port = url.port === "" ? 80 : Number(url.port);
  return allowed.has(name) && port === hostPort(host);
}
