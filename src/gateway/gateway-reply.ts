import type { ServerResponse } from "node:http";

/**
 * An error the gateway itself answers with, shaped so both SDKs read its message (`error.message`
 * is where Anthropic's and OpenAI's error bodies keep it). `x-should-retry: false` keeps the SDK from
 * retrying what the gateway already decided.
 */
export function gatewayError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ type: "error", error: { type: "swarmd_gateway_error", message } });
  res.writeHead(status, {
    "content-type": "application/json",
    "x-should-retry": "false",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/**
 * Write a chunk to the agent without waiting on it: a paused (frozen) agent reads nothing, and the
 * call must still complete and count. Only past `limit` buffered bytes does the writer wait.
 */
export async function writeOut(
  res: ServerResponse,
  chunk: Uint8Array | string,
  limit = 8 * 1024 * 1024,
): Promise<void> {
  if (res.destroyed || res.writableEnded) return;
  res.write(chunk);
  if (res.writableLength <= limit) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
