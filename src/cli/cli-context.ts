import type { SpecStore } from "../client/spec-store.ts";
import type { SwarmClient } from "../client/swarm-client.ts";

/** Where a command writes. Tests capture it; the real one is the process's stdout and stderr. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** stdout is a terminal: draw live (redraw in place) rather than print a final frame. */
  isTTY: boolean;
}

/** What every command gets. */
export interface CliContext {
  io: CliIo;
  /**
   * The service client for SWARM_URL, or for `url` (the command's `--url`) when given. Built on
   * use, so commands that never call the service never need a valid SWARM_URL.
   */
  client(url?: string): SwarmClient;
  /** The saved-spec cache (loaded on use: it brings in the spec schema). */
  specs(): Promise<SpecStore>;
  /** Aborted on Ctrl-C: following commands stop and the CLI exits 130. */
  signal: AbortSignal;
}

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  json: { type: "boolean", default: false },
  url: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
} as const;

/** Writes `value` as one line of JSON. */
export function printJson(io: CliIo, value: unknown): void {
  io.out(`${JSON.stringify(value)}\n`);
}

/** The spend-cap options of `run` and `budget` (read with `spendCapOptions`). */
export const SPEND_OPTIONS = {
  "max-tokens": { type: "string" },
  "max-cost-usd": { type: "string" },
} as const;
