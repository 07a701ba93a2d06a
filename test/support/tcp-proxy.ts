import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  url: string;
  /** Cuts every open connection at once (both ends reset), as a dropped network would. */
  cutAll(): number;
  /** While blocked, new connections are reset as they come: the network stays down. */
  block(blocked: boolean): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of `target` (127.0.0.1:port), so a test can drop a browser's connections. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let blocked = false;
  const server: Server = createServer((client) => {
    if (blocked) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream).pipe(client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    cutAll() {
      const n = pairs.size;
      for (const [client, upstream] of [...pairs]) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
      return n;
    },
    block(on) {
      blocked = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [client, upstream] of pairs) {
          client.destroy();
          upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
