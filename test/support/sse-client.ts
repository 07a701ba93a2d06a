import { type ClientRequest, type IncomingMessage, request } from "node:http";
import { createWaitList } from "./wait-list.ts";

export interface SseMessage {
  id?: number;
  event: string;
  data: Record<string, unknown> & { agentId: string | null };
}

/** A real SSE connection: every message (and comment) it received, parsed, in order. */
export interface SseConnection {
  status: number;
  messages: SseMessage[];
  comments: string[];
  ended: boolean;
  waitFor(match: (m: SseMessage) => boolean, timeoutMs?: number): Promise<SseMessage>;
  /** `condition` is checked now, then each time a frame arrives or the connection ends. */
  waitUntil(condition: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): void;
  response: IncomingMessage;
  request: ClientRequest;
}

export function openEvents(
  base: string,
  runId: string,
  options: { lastEventId?: number; query?: string; token?: string } = {},
): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (options.lastEventId !== undefined) headers["last-event-id"] = String(options.lastEventId);
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const req = request(`${base}/runs/${runId}/events${options.query ?? ""}`, { headers }, (res) => {
      const waits = createWaitList();
      const connection: SseConnection = {
        status: res.statusCode ?? 0,
        messages: [],
        comments: [],
        ended: false,
        response: res,
        request: req,
        waitFor: (match, timeoutMs = 20_000) =>
          waits.until(
            () => connection.messages.find(match),
            timeoutMs,
            () => `no matching event; saw ${connection.messages.map((m) => m.event).join(",")}`,
          ),
        waitUntil: async (condition, timeoutMs = 20_000, what = "condition") => {
          await waits.until(
            () => (condition() ? true : undefined),
            timeoutMs,
            () => `timed out waiting for ${what}`,
          );
        },
        close: () => req.destroy(),
      };
      readFrames(res, (frame) => {
        if (frame.comment !== undefined) connection.comments.push(frame.comment);
        if (frame.data !== undefined)
          connection.messages.push({
            id: frame.id,
            event: frame.event ?? "message",
            data: frame.data as SseMessage["data"],
          });
        waits.wake();
      });
      const end = () => {
        connection.ended = true;
        waits.wake();
      };
      res.on("end", end);
      res.on("close", end);
      resolve(connection);
    });
    req.on("error", reject);
    req.end();
  });
}

/** One SSE frame as read off the wire: the fields of a message, or a comment (the heartbeat). */
export interface SseFrame {
  id?: number;
  event?: string;
  data?: Record<string, unknown>;
  comment?: string;
}

/**
 * Calls `onFrame` with each complete frame of `res`, in order. Only complete frames count: a
 * connection cut mid-frame must not yield half an event.
 */
export function readFrames(res: IncomingMessage, onFrame: (frame: SseFrame) => void): void {
  let buffer = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    buffer += chunk;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      onFrame(parseFrame(block));
    }
  });
}

function parseFrame(block: string): SseFrame {
  const frame: SseFrame = {};
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) {
      frame.comment = line.slice(1).trim();
      continue;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    // The value starts after the colon and one optional space (the SSE format's own rule).
    const value = colon < 0 ? "" : line.slice(line[colon + 1] === " " ? colon + 2 : colon + 1);
    if (field === "id") frame.id = Number(value);
    else if (field === "event") frame.event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length > 0) frame.data = JSON.parse(data.join("\n")) as Record<string, unknown>;
  return frame;
}
