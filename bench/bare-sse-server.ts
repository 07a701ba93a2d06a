import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The baseline SSE writer: bare `node:http`, no framework, no ledger. Live clients get every frame
 * passed to `broadcast`; with `replay`, each new client is first written what `replay` writes.
 */
export interface BareSse {
  url: string;
  broadcast(frame: string): void;
  close(): Promise<void>;
}

export async function startBareSse(replay?: (res: ServerResponse) => Promise<void>): Promise<BareSse> {
  const clients = new Set<ServerResponse>();
  const server = createServer((_req, res) => {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
    });
    res.flushHeaders();
    res.on("close", () => clients.delete(res));
    if (replay) void replay(res).catch(() => res.destroy());
    else clients.add(res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    broadcast(frame) {
      for (const res of clients) res.write(frame);
    },
    async close() {
      for (const res of clients) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

/** Write a frame, waiting for `drain` when the socket's buffer is full. */
export async function writeFrame(res: ServerResponse, frame: string): Promise<void> {
  if (!res.write(frame)) await once(res, "drain");
}
