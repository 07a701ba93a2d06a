import { existsSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { SwarmError } from "../errors.ts";
import { sendFile, staticFiles } from "./static-file.ts";

/** Where `npm run build:console` (run by `npm ci` and `make`) writes the console: Vite's output. */
export const CONSOLE_DIR = fileURLToPath(new URL("../../dist/console/", import.meta.url));

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

/** A file name Vite writes (`index-<hash>.js`): no folder, no dot file, so nothing outside the build is named. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

/**
 * The page runs only what the daemon serves and talks only to the daemon. Everything an agent
 * writes reaches it as text (Preact escapes it); with no inline script allowed, a string that did
 * get parsed as markup still could not run.
 */
const PAGE_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The operator console: `GET /` (its page) and `GET /console/:asset` (its scripts and styles), from
 * the build in `dist/console/`. Open like the docs page (`auth.ts`): a browser cannot put a token on
 * a page load. The page asks for the token and sends it on every API and stream call.
 */
export function consolePage(app: FastifyInstance, dir = CONSOLE_DIR): void {
  const read = staticFiles();

  app.get("/", async (request, reply) => {
    // The router also hands `/` an asterisk-form target (`GET *`); only the page's own path is the page.
    const path = request.url.split("?")[0] ?? "";
    if (path !== "/") throw new SwarmError("NOT_FOUND", `No route GET ${path}.`);
    const index = join(dir, "index.html");
    if (!existsSync(index))
      throw new SwarmError(
        "CONSOLE_NOT_BUILT",
        "The console is not built (no dist/console/index.html): run `npm run build:console`; `make run` builds it.",
      );
    reply.header("content-security-policy", PAGE_POLICY).header("referrer-policy", "no-referrer");
    // Not kept: a rebuild names new assets, and the page must name them at once.
    return sendFile(request, reply, staticFiles()(index, "text/html; charset=utf-8"));
  });

  app.get<{ Params: { asset: string } }>("/console/:asset", async (request, reply) => {
    const { asset } = request.params;
    const type = TYPES[extname(asset)];
    const path = join(dir, asset);
    if (type === undefined || !ASSET_NAME.test(asset) || !existsSync(path))
      throw new SwarmError("NOT_FOUND", `No route GET ${request.url.split("?")[0] ?? ""}.`);
    // Vite names each file by its content, so a name always means the same bytes.
    return sendFile(request, reply, read(path, type), "public, max-age=31536000, immutable");
  });
}
