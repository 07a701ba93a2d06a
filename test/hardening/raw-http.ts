import { connect } from "node:net";

/**
 * One HTTP/1.1 request written byte for byte on its own socket, so a test can send what no
 * well-behaved client would: raw paths (`..`, `%00`, 20 KB long), duplicate headers, bodies that
 * do not match their content type, chunked bodies over the limit.
 */
export interface RawRequest {
  method: string;
  /** Sent exactly as given on the request line. */
  path: string;
  /** In order; duplicates allowed. `host` and `connection: close` are always sent first. */
  headers?: ReadonlyArray<readonly [string, string]>;
  body?: string | Buffer;
  /**
   * How the body is framed: a `content-length` (default), `transfer-encoding: chunked`, or `as-is`
   * (the bytes follow the head with no framing header added: the test's own headers decide).
   */
  framing?: "length" | "chunked" | "as-is";
}

export interface RawReply {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Resolves with the parsed answer once the server closes the connection; rejects when no complete
 * answer arrived within `timeoutMs` (a hang) or the connection failed before one did.
 */
export function rawRequest(port: number, req: RawRequest, timeoutMs: number): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const reply = parseReply(Buffer.concat(chunks));
      if (reply) resolve(reply);
      else
        reject(
          err ??
            new Error(`incomplete answer: ${JSON.stringify(Buffer.concat(chunks).toString("latin1").slice(0, 200))}`),
        );
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      // A server that answered early (a 413 before the whole body) may reset the socket while we
      // still write; the answer is already complete, so take it now.
      if (parseReply(Buffer.concat(chunks), true)) finish();
    });
    socket.on("end", () => finish());
    socket.on("close", () => finish());
    socket.on("error", (err) => finish(err));
    socket.on("connect", () => {
      const body =
        req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, "utf8");
      const lines = [`${req.method} ${req.path} HTTP/1.1`, "host: 127.0.0.1", "connection: close"];
      for (const [name, value] of req.headers ?? []) lines.push(`${name}: ${value}`);
      const framing = req.framing ?? "length";
      if (body !== undefined && framing !== "as-is")
        lines.push(framing === "chunked" ? "transfer-encoding: chunked" : `content-length: ${body.length}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
      if (body === undefined) return;
      if (framing !== "chunked") socket.write(body);
      else {
        for (let at = 0; at < body.length; at += 64 * 1024) {
          const piece = body.subarray(at, at + 64 * 1024);
          socket.write(`${piece.length.toString(16)}\r\n`);
          socket.write(piece);
          socket.write("\r\n");
        }
        socket.write("0\r\n\r\n");
      }
    });
  });
}

/** The reply in `bytes`, or undefined while incomplete (with `strict`, a body of unknown length counts as incomplete). */
function parseReply(bytes: Buffer, strict = false): RawReply | undefined {
  const headEnd = bytes.indexOf("\r\n\r\n");
  if (headEnd < 0) return undefined;
  const [statusLine = "", ...headerLines] = bytes.subarray(0, headEnd).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) return undefined;
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(headEnd + 4);
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    const body = dechunk(rest);
    return body === undefined ? undefined : { status, headers, body: body.toString("utf8") };
  }
  if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    if (rest.length < length) return undefined;
    return { status, headers, body: rest.subarray(0, length).toString("utf8") };
  }
  return strict ? undefined : { status, headers, body: rest.toString("utf8") };
}

function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (!Number.isInteger(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
