import { EndpointError, isServiceError, isUnreachable, SpecStoreError } from "../client/client-errors.ts";

/**
 * Exit codes `swarm` promises to scripts (docs/controls.md, "Exit codes"). Stable: add, never renumber.
 */
export const EXIT = {
  /**
   * Done, or already so: a control whose members were applied or had nothing to do (`already
   * paused`, `already ended`, `not paused: nothing to resume`); for `result`, the result is settled.
   */
  OK: 0,
  /**
   * The service refused (its message, or what the agent's state says, is printed: not live,
   * draining, no such agent, in a turn, not a fork, a conflict of an adopt), a member of a control
   * failed, a spawn or a fork's child was refused by a budget, or `swarm wait --first` saw every
   * agent settle and none succeed.
   */
  SERVICE: 1,
  /** Bad command line or local input: unknown command or option, unreadable spec file, bad spec name, SWARM_URL not a URL. */
  USAGE: 2,
  /** Nothing answered at SWARM_URL (refused, unresolvable, or no answer in time). */
  UNREACHABLE: 3,
  /** `swarm result`: still pending after `--wait`; `swarm wait`: some still pending (and no winner) after `--timeout`. */
  PENDING: 4,
  /** Interrupted (Ctrl-C) before finishing. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A mistake on the command line; the message says what to type instead. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The exit code and the one line printed on stderr for anything a command throws. */
export function describeFailure(err: unknown): { code: ExitCode; message: string } {
  if (isServiceError(err)) return { code: EXIT.SERVICE, message: `service error ${err.status}: ${err.message}` };
  if (isUnreachable(err)) return { code: EXIT.UNREACHABLE, message: err.message };
  if (err instanceof UsageError || err instanceof SpecStoreError || err instanceof EndpointError)
    return { code: EXIT.USAGE, message: err.message };
  // parseArgs reports unknown options and missing values as TypeErrors with ERR_PARSE_ARGS_* codes.
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS"))
    return { code: EXIT.USAGE, message: (err as Error).message };
  return { code: EXIT.SERVICE, message: err instanceof Error ? err.message : String(err) };
}
