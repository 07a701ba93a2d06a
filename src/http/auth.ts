import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { SwarmError } from "../errors.ts";

/**
 * Routes anyone may call: liveness probes carry no credentials, and a browser cannot put a token on
 * a page load, so the docs page, the console and their static files are open (they are the same for
 * everyone; each page asks for the token and sends it on every API call it makes).
 */
const OPEN_ROUTES = new Set(["/health", "/docs", "/docs/:asset", "/", "/console/:asset"]);

/**
 * An `onRequest` hook requiring `Authorization: Bearer <token>` on every route but the open ones above.
 * Unknown routes need it too, so an unauthenticated caller cannot map the API by its 404s.
 */
export function bearerAuth(token: string): (request: FastifyRequest) => Promise<void> {
  const expected = digest(token);
  return async (request) => {
    const route = request.routeOptions.url;
    // The router also hands `/` an asterisk-form target (`GET *`): an unknown route, so it wants the token.
    if (route !== undefined && OPEN_ROUTES.has(route) && (route !== "/" || request.url.split("?")[0] === "/")) return;
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? "");
    // Digests are equal-length whatever was sent, so the comparison leaks neither content nor length.
    if (match?.[1] === undefined || !timingSafeEqual(digest(match[1]), expected)) throw new SwarmError("UNAUTHORIZED");
  };
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}
