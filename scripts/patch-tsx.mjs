/**
 * Run after every install (`postinstall`): turn off esbuild's `keepNames` in the options tsx
 * transforms our TypeScript with. tsx hard-codes it on, so esbuild wraps every named function,
 * arrow function assigned to a name, and class in `__name(fn, "name")`, which redefines the
 * function's own `name`: each closure the daemon makes then holds a dictionary of properties
 * (256 bytes more, ~13 KiB per agent of the simulated runtime) and costs a defineProperty call.
 * Transforming without minifying identifiers, esbuild renames nothing, so every name is the one
 * written (checked by test/setup/tsx-names.test.ts, which fails if this patch no longer applies).
 * Upstream: tsx could leave `keepNames` off when it does not minify identifiers (it never does).
 * Idempotent; changes nothing but that one option, in tsx's own dist files.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const ON = "minifyWhitespace:!0,keepNames:!0}";
const OFF = "minifyWhitespace:!0,keepNames:!1}";

let dist;
try {
  dist = join(dirname(createRequire(import.meta.url).resolve("tsx/package.json")), "dist");
} catch {
  process.exit(0); // no tsx installed (a production install without it): nothing to patch
}
let patched = 0;
let already = 0;
for (const name of readdirSync(dist)) {
  if (!/\.(c|m)?js$/.test(name)) continue;
  const file = join(dist, name);
  const text = readFileSync(file, "utf8");
  if (text.includes(ON)) {
    writeFileSync(file, text.split(ON).join(OFF));
    patched++;
  } else if (text.includes(OFF)) already++;
}
if (patched + already === 0)
  console.warn("patch-tsx: tsx's transform options were not found; keepNames stays on (see scripts/patch-tsx.mjs)");
else if (patched > 0) console.log(`patch-tsx: esbuild's keepNames turned off in ${patched} tsx file(s)`);
