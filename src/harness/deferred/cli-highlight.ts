/**
 * `cli-highlight` as pi.cjs holds it: pi highlights code only for its terminal interface, which a
 * harness never shows. cli-highlight and highlight.js (1.4 MB, every language registered at load)
 * stay in node_modules and are loaded from there if ever used.
 */
import { createRequire } from "node:module";
import type * as CliHighlight from "cli-highlight";

const load = (name: string) => createRequire(__filename)(name) as typeof CliHighlight;

export const highlight: typeof CliHighlight.highlight = (...args) => load("cli-highlight").highlight(...args);
export const supportsLanguage: typeof CliHighlight.supportsLanguage = (...args) =>
  load("cli-highlight").supportsLanguage(...args);
export const listLanguages: typeof CliHighlight.listLanguages = (...args) =>
  load("cli-highlight").listLanguages(...args);
