import type { FastifyRequest } from "fastify";
import { SwarmError } from "../errors.ts";

/** What a local client calls the daemon by, whatever it listens on. */
const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1"];

/** Longest part of a refused Host header quoted back in the message. */
const QUOTE_LIMIT = 200;

/**
 * An `onRequest` hook answering 403 to a request whose Host header names neither a loopback name
 * nor one of `names`, on every route (`/health` too). The defence against DNS rebinding: a web page
 * that points its own name at 127.0.0.1 gets its requests to the daemon sent by the browser, but
 * still with its own name as Host. Ports are not compared: the name is what the page controls.
 * A request with no Host header is refused as well (HTTP/1.1 requires one).
 */
export function hostCheck(names: readonly string[] = []): (request: FastifyRequest) => Promise<void> {
  const allowed = servedNames(names);
  return async (request) => {
    const host = request.headers.host;
    if (host === undefined || host === "")
      throw new SwarmError(
        "HOST_NOT_ALLOWED",
        "The request has no Host header; it must name 127.0.0.1, localhost, [::1], SWARM_HOST or a name in SWARM_ALLOWED_HOSTS.",
      );
    const name = hostName(host);
    if (name === undefined || !allowed.has(name)) {
      const quoted = JSON.stringify(host.length > QUOTE_LIMIT ? `${host.slice(0, QUOTE_LIMIT)}…` : host);
      throw new SwarmError(
        "HOST_NOT_ALLOWED",
        `Host ${quoted} is not served here: only 127.0.0.1, localhost, [::1], SWARM_HOST and the names in SWARM_ALLOWED_HOSTS are.`,
      );
    }
  };
}

/** The names a Host header may carry: the loopback ones and `names`, lower-cased, IPv6 unbracketed. */
export function servedNames(names: readonly string[] = []): ReadonlySet<string> {
  return new Set([...LOOPBACK_NAMES, ...names].map((name) => name.replace(/^\[(.*)\]$/, "$1").toLowerCase()));
}

const HOST = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/i;

/** The name in a Host header (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased, IPv6 unbracketed; `undefined` when malformed. */
export function hostName(value: string): string | undefined {
  const match = HOST.exec(value);
  const name = match?.[1] ?? match?.[2];
  return name?.toLowerCase();
}

/** The port a Host header names, 80 when it names none; `undefined` when malformed. */
export function hostPort(value: string): number | undefined {
  const match = HOST.exec(value);
  return match === null ? undefined : Number(match[3] ?? 80);
}
