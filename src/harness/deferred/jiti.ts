/**
 * `jiti/static` as pi.cjs holds it: pi loads jiti (1.7 MB, the largest package pi.cjs would hold)
 * only to run pi extensions, which a harness has none of. It stays in node_modules and is loaded
 * from there if ever used, instead of being read, deserialized and run by every agent's harness.
 */
import { createRequire } from "node:module";
import type * as Jiti from "jiti";

const load = (name: string) => createRequire(__filename)(name) as typeof Jiti;

export const createJiti: typeof Jiti.createJiti = (...args) => load("jiti").createJiti(...args);
