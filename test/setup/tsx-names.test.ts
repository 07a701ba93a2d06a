/**
 * The daemon's TypeScript runs through tsx, whose esbuild transform wraps every named function in
 * `__name(fn, "name")` unless scripts/patch-packages.mjs (the `postinstall`) turned that off: each
 * closure the daemon makes would hold a dictionary of properties and cost a defineProperty. This
 * fails when the patch no longer applies (a tsx release that moved its options), and checks that
 * names stay as written without it.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";

const dir = mkdtempSync(join(tmpdir(), "swarmd-tsx-names-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Run `source` as a TypeScript module under tsx, with V8's natives syntax, and parse what it prints. */
function underTsx(source: string): Record<string, unknown> {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(file, source);
  const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", file], {
    encoding: "utf8",
    env: { ...process.env, TSX_DISABLE_CACHE: "1" },
  });
  return JSON.parse(out);
}

describe("tsx runs the daemon's TypeScript without esbuild's keepNames", () => {
  it("a closure made by a named function keeps fast properties, and every name is the one written", () => {
    const seen = underTsx(`
      const fast = new Function("f", "return %HasFastProperties(f)") as (f: unknown) => boolean;
      function make(n: number) {
        const add = (m: number): number => n + m;
        return add;
      }
      class Ledgerish {}
      const made = make(1);
      console.log(JSON.stringify({ fast: fast(made), fastMake: fast(make), name: made.name, makeName: make.name, className: Ledgerish.name }));
    `);
    assert.deepEqual(seen, { fast: true, fastMake: true, name: "add", makeName: "make", className: "Ledgerish" });
  });

  it("the daemon's own modules load the same way: a function of one of them has fast properties", () => {
    const module = join(import.meta.dirname, "../../actors/run/machine-log.ts");
    const seen = underTsx(`
      const fast = new Function("f", "return %HasFastProperties(f)") as (f: unknown) => boolean;
      const { loggedMachine, MachineLog } = await import(${JSON.stringify(module)});
      console.log(JSON.stringify({ fast: fast(loggedMachine), name: loggedMachine.name, className: MachineLog.name }));
    `);
    assert.deepEqual(seen, { fast: true, name: "loggedMachine", className: "MachineLog" });
  });
});
