/**
 * The shell blocks of a markdown page (```sh, ```bash, ```shell, ```console), with the notes written
 * on the lines right above each:
 *
 *   <!-- not run: needs a real provider key -->    the block is not run, for the reason given
 *   <!-- expect: "state":"settled" -->             the block's stdout must hold this text (repeatable)
 *
 * and the one bash script that runs a page's blocks in order, in one shell, as a reader pasting them
 * one after the other would: variables set by a block stay set for the next.
 */

export interface ShellBlock {
  /** The page's path, as given. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The block's text, its indentation (a block inside a list item) taken off. */
  code: string;
  /** Why it is not run, when a `not run` note says so. */
  notRun?: string;
  /** Texts its standard output must hold. */
  expect: string[];
}

const SHELL_LANGS = new Set(["sh", "bash", "shell", "console"]);
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/;
const NOTE = /^<!--\s*(not run|expect):\s*(.*?)\s*-->$/;

export function shellBlocks(file: string, markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? "");
    if (!open) continue;
    const [, indent = "", fence = "", lang = ""] = open;
    const close = new RegExp(`^\\s*${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end] ?? "")) end++;
    if (SHELL_LANGS.has(lang)) {
      const body = lines.slice(i + 1, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
      const code = lang === "console" ? consoleCommands(body) : body.join("\n");
      blocks.push({ file, line: i + 1, lang, code, ...notesAbove(lines, i) });
    }
    i = end;
  }
  return blocks;
}

/** The notes on the lines right above line `at` (no blank line between). */
function notesAbove(lines: string[], at: number): { notRun?: string; expect: string[] } {
  const expect: string[] = [];
  let notRun: string | undefined;
  for (let k = at - 1; k >= 0; k--) {
    const note = NOTE.exec((lines[k] ?? "").trim());
    if (!note) break;
    if (note[1] === "not run") notRun = note[2] ?? "";
    else expect.unshift(note[2] ?? "");
  }
  return notRun === undefined ? { expect } : { notRun, expect };
}

/** A console block's commands: its `$ ` lines, prompt taken off; the rest is output shown. */
function consoleCommands(body: string[]): string {
  return body
    .filter((l) => l.startsWith("$ "))
    .map((l) => l.slice(2))
    .join("\n");
}

export const BLOCK_MARK = "::swarmd-docs-block";

/**
 * One bash script running the blocks in order. Each block runs in the script's own shell; a failed
 * command (one `set -e` would stop at, pipelines included) marks the block failed without stopping
 * the script, and every block ends with a line `::swarmd-docs-block <index> end <failed 0|1>` on
 * stdout (and starts with `… start` on both streams), so its output and result can be told apart.
 */
export function driverScript(blocks: ShellBlock[]): string {
  const parts = [
    "set -o pipefail -o errtrace",
    "__failed=0",
    `trap '__status=$?; __failed=1; echo "[docs test] failed (exit $__status): $BASH_COMMAND" >&2' ERR`,
  ];
  blocks.forEach((block, index) => {
    parts.push(
      `echo "${BLOCK_MARK} ${index} start"; echo >&2; echo "${BLOCK_MARK} ${index} start" >&2; __failed=0`,
      block.code,
      `echo; echo "${BLOCK_MARK} ${index} end $__failed"`,
    );
  });
  return `${parts.join("\n")}\n`;
}

export interface BlockOutcome {
  ran: boolean;
  failed: boolean;
  stdout: string;
  stderr: string;
}

/** Splits the driver's output into each block's part. */
export function blockOutcomes(count: number, stdout: string, stderr: string): BlockOutcome[] {
  const outs = byBlock(stdout);
  const errs = byBlock(stderr);
  return Array.from({ length: count }, (_, index) => {
    const out = outs.get(index);
    return {
      ran: out?.end !== undefined,
      failed: out?.end !== "0",
      stdout: out?.text ?? "",
      stderr: errs.get(index)?.text ?? "",
    };
  });
}

function byBlock(stream: string): Map<number, { text: string; end?: string }> {
  const parts = new Map<number, { text: string; end?: string }>();
  let current: { text: string; end?: string } | undefined;
  for (const line of stream.split("\n")) {
    if (line.startsWith(`${BLOCK_MARK} `)) {
      const [index = "", what = "", failed] = line.slice(BLOCK_MARK.length + 1).split(" ");
      if (what === "start") {
        current = { text: "" };
        parts.set(Number(index), current);
      } else if (current) {
        current.end = failed;
        current = undefined;
      }
      continue;
    }
    if (current) current.text += `${line}\n`;
  }
  return parts;
}
