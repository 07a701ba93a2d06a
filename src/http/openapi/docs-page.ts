import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { SwarmError } from "../../errors.ts";
import { sendFile as send, staticFiles } from "../static-file.ts";

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "docs-page");

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

/** The files under `/docs/`: swagger-ui's, from the installed package, and the page's own. Nothing else is served. */
const ASSETS: Record<string, { dir: string; type: string }> = {
  "swagger-ui-bundle.js": { dir: SWAGGER_UI_DIR, type: JS },
  "swagger-ui.css": { dir: SWAGGER_UI_DIR, type: CSS },
  "favicon-32x32.png": { dir: SWAGGER_UI_DIR, type: "image/png" },
  "favicon-16x16.png": { dir: SWAGGER_UI_DIR, type: "image/png" },
  "docs.js": { dir: PAGE_DIR, type: JS },
  "docs.css": { dir: PAGE_DIR, type: CSS },
};
export const DOCS_ASSET_NAMES: readonly string[] = Object.keys(ASSETS);

/**
 * The page may load only from the daemon: nothing it fetches, runs or shows can come from another
 * host. swagger-ui sets inline styles and draws icons from `data:` URLs; its scripts are files.
 */
const PAGE_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/**
 * `GET /docs` (swagger-ui showing `/openapi.json`) and `GET /docs/:asset`, from package files: no
 * CDN, no internet. They need no token (`auth.ts`): a browser cannot put one on a page load, and
 * these files are the same for everyone. The page asks for the token when `/openapi.json` wants it.
 * Files are read on first request and kept.
 */
export function docsPage(app: FastifyInstance): void {
  const read = staticFiles();
  const load = (name: string, dir: string, type: string) => read(join(dir, name), type);

  app.get("/docs", async (request, reply) => {
    reply.header("content-security-policy", PAGE_POLICY).header("referrer-policy", "no-referrer");
    return send(request, reply, load("index.html", PAGE_DIR, "text/html; charset=utf-8"));
  });

  app.get<{ Params: { asset: string } }>("/docs/:asset", async (request, reply) => {
    const { asset } = request.params;
    const known = Object.hasOwn(ASSETS, asset) ? ASSETS[asset] : undefined;
    if (known === undefined) throw new SwarmError("NOT_FOUND", `No route GET ${request.url.split("?")[0] ?? ""}.`);
    return send(request, reply, load(asset, known.dir, known.type));
  });
}
