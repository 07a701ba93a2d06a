import pino, { type Logger } from "pino";
import pretty from "pino-pretty";

/** `pretty`: one readable line per entry (a terminal's default); `json`: one JSON object per line. */
export type LogFormat = "pretty" | "json";
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export interface LoggerOptions {
  level: LogLevel;
  /** SWARM_LOG_FORMAT; unset: `pretty` when stdout is a terminal, else `json`. */
  format?: LogFormat;
  /** The daemon's bearer token: never written, wherever it would appear. */
  token?: string;
  /** Where lines go; stdout by default (tests pass their own). */
  destination?: NodeJS.WritableStream;
}

const REDACTED = "[redacted]";

/**
 * Fields that hold credentials, at any depth a log call is likely to carry them: the request's
 * `Authorization` header and anything named token or key.
 */
const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "*.authorization",
  "token",
  "*.token",
  "apiKey",
  "*.apiKey",
];

/**
 * The daemon's logger (pino): human-readable lines on a terminal, JSON otherwise. Credentials are
 * redacted by field (`REDACT_PATHS`) and, in message text, wherever a `Bearer …` credential or
 * the daemon's own token appears, so no code path can print one by accident.
 */
export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? process.stdout;
  const format = options.format ?? ((destination as { isTTY?: boolean }).isTTY ? "pretty" : "json");
  const scrub = scrubber(options.token);
  const config = {
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    hooks: {
      logMethod(args: unknown[], method: (...args: unknown[]) => void) {
        method.apply(
          this,
          args.map((arg) => (typeof arg === "string" ? scrub(arg) : arg)),
        );
      },
    },
  };
  if (format === "json") return pino(config, destination as pino.DestinationStream);
  const colorize = (destination as { isTTY?: boolean }).isTTY === true;
  return pino(
    config,
    pretty({ destination, colorize, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }),
  );
}

/** Replaces credentials in message text. */
function scrubber(token: string | undefined): (text: string) => string {
  return (text) => {
    let out = text.replace(/(Bearer\s+)[^\s"',;]+/gi, `$1${REDACTED}`);
    if (token) out = out.split(token).join(REDACTED);
    return out;
  };
}
