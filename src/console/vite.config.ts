/**
 * The console's build: `npm run build:console` (run by `npm ci` and by `make` when a source is newer)
 * writes `dist/console/`, which the daemon serves at `/` and `/console/<file>` (src/http/console-page.ts).
 * Flat file names under `/console/`, no source maps, nothing loaded from elsewhere.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../../dist/console/", import.meta.url)),
    emptyOutDir: true,
    assetsDir: "",
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: "es2022",
  },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
});
