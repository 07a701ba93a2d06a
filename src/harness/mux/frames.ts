/**
 * The stream's framing, shared by its three speakers: the daemon (src/sandbox/stream/), the
 * supervisor in a cluster sandbox (src/harness/supervisor.ts) and the harness in stdio mode.
 * Every frame is one line of JSON: `{"c": channel, "t": type, ...}`. Channel 0 carries control
 * frames (hello, requests and their answers); every other channel is a byte stream opened by a
 * name (`harness`, `model`, `request`), its bytes base64 in `data` frames of at most
 * `MUX_LIMITS.chunkBytes`, acknowledged by `ack` frames as its reader takes them (a window per
 * channel, so no side ever holds more than `MUX_LIMITS.window` of one channel's unread bytes).
 */

export const MUX_LIMITS = {
  /** A longer line is a protocol error: dropped and logged. */
  maxLineBytes: 1024 * 1024,
  /** Bytes of one `data` frame (before base64). */
  chunkBytes: 64 * 1024,
  /** Unacknowledged bytes a sender may have on one channel; more is a protocol error that closes it. */
  window: 128 * 1024,
  /** Channels open at once per side; a further `open` is answered by `close`. */
  maxChannels: 32,
  /** The longest channel name. */
  maxNameLength: 64,
} as const;

/** The frames of one channel (`c` > 0). `end`: the sender writes no more; `close`: the channel is gone both ways. */
export type ChannelFrame =
  | { c: number; t: "open"; n: string }
  | { c: number; t: "data"; d: string }
  | { c: number; t: "end" }
  | { c: number; t: "close" }
  | { c: number; t: "ack"; b: number };

/** A control frame (`c` = 0): `t` and whatever fields its type has. Read by the mux's owner, who checks them. */
export type ControlFrame = { c: 0; t: string } & Record<string, unknown>;

export type Frame = ChannelFrame | ControlFrame;

/** One frame as the line that carries it. */
export const frameLine = (frame: Frame): string => `${JSON.stringify(frame)}\n`;

/** A line as a frame, or why it is not one. Checks the shape only; what a control frame says is its reader's to check. */
export function parseFrame(line: string): { frame: Frame } | { error: string } {
  const checked = checkFrame(line);
  return typeof checked === "string" ? { error: checked } : { frame: checked };
}

function checkFrame(line: string): Frame | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "not JSON";
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not an object";
  const frame = value as Record<string, unknown>;
  const { c, t } = frame;
  if (typeof c !== "number" || !Number.isSafeInteger(c) || c < 0) return "no channel number";
  if (typeof t !== "string") return "no frame type";
  if (c === 0) return frame as ControlFrame;
  switch (t) {
    case "open":
      return typeof frame.n === "string" && frame.n.length > 0 && frame.n.length <= MUX_LIMITS.maxNameLength
        ? { c, t, n: frame.n }
        : "open without a valid name";
    case "data":
      return typeof frame.d === "string" ? { c, t, d: frame.d } : "data without a payload";
    case "ack":
      return typeof frame.b === "number" && Number.isSafeInteger(frame.b) && frame.b > 0
        ? { c, t, b: frame.b }
        : "ack without a byte count";
    case "end":
    case "close":
      return { c, t };
    default:
      return `unknown frame type ${JSON.stringify(t).slice(0, 40)}`;
  }
}
