import { request, type ClientRequest, type IncomingMessage } from "node:http";

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
  waitUntil(condition: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): void;
  response: IncomingMessage;
  request: ClientRequest;
}

export function openEvents(base: string, runId: string, options: { lastEventId?: number; query?: string; token?: string } = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (options.lastEventId !== undefined) headers["last-event-id"] = String(options.lastEventId);
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const req = request(`${base}/runs/${runId}/events${options.query ?? ""}`, { headers }, (res) => {
      const connection: SseConnection = {
        status: res.statusCode ?? 0,
        messages: [],
        comments: [],
        ended: false,
        response: res,
        request: req,
        waitFor: (match, timeoutMs = 20_000) =>
          new Promise((done, fail) => {
            const deadline = Date.now() + timeoutMs;
            const check = () => {
              const found = connection.messages.find(match);
              if (found) return done(found);
              if (Date.now() > deadline) return fail(new Error(`no matching event; saw ${connection.messages.map((m) => m.event).join(",")}`));
              setTimeout(check, 20);
            };
            check();
          }),
        waitUntil: (condition, timeoutMs = 20_000, what = "condition") =>
          new Promise((done, fail) => {
            const deadline = Date.now() + timeoutMs;
            const check = () => {
              if (condition()) return done();
              if (Date.now() > deadline) return fail(new Error(`timed out waiting for ${what}`));
              setTimeout(check, 20);
            };
            check();
          }),
        close: () => req.destroy(),
      };
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          parseFrame(frame, connection);
        }
      });
      res.on("end", () => (connection.ended = true));
      res.on("close", () => (connection.ended = true));
      resolve(connection);
    });
    req.on("error", reject);
    req.end();
  });
}

function parseFrame(frame: string, connection: SseConnection): void {
  let id: number | undefined;
  let event = "message";
  let data = "";
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) connection.comments.push(line.slice(1).trim());
    else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
    else if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (data) connection.messages.push({ id, event, data: JSON.parse(data) as SseMessage["data"] });
}
