import type { FastifyInstance } from "fastify";
import { docsPage } from "./docs-page.ts";
import { createOpenApiDocument, type OpenApiDocument } from "./openapi-document.ts";

/**
 * `GET /openapi.json` and the docs page (`/docs`). The document needs the token like every other
 * route (spec section 5: only `/health` is open); the page and its files do not (see docs-page.ts).
 * The document is built on first request and kept: it depends on nothing but the code.
 */
export function openApiRoutes(app: FastifyInstance): void {
  let document: OpenApiDocument | undefined;
  app.get("/openapi.json", async () => (document ??= createOpenApiDocument()));
  docsPage(app);
}
