import { connect, createServer, type Socket } from "node:net";
import type { FreezeGate } from "./freeze-gate.ts";

export interface SocketRelay {
  /** Cut every connection at once, with what is still on its way (a kill). */
  cut(): void;
  /** Stop listening; resolves once every connection has ended (each ends with its harness side). */
  close(): Promise<void>;
}

/**
 * The socket a memory sandbox's `connect` reaches: a Unix socket at `path` whose every connection
 * is joined to a new connection to the harness at `harnessPath`. Bytes cross only while the gate
 * is open, so a frozen harness neither hears commands nor answers, as a frozen process would; a
 * connection made while frozen reaches the harness (and replaces its client) only at the thaw.
 */
export function startSocketRelay(path: string, harnessPath: string, gate: FreezeGate): Promise<SocketRelay> {
  const sockets = new Set<Socket>(); // every socket of the relay, for `cut`
  const joined = new Set<Socket>(); // those already joined, paused and resumed with the gate
  const flow = (socket: Socket) => (gate.frozen ? socket.pause() : socket.resume());
  const unwatch = gate.watch(() => joined.forEach(flow));
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      sockets.delete(socket);
      joined.delete(socket);
    });
  };

  const join = (front: Socket) => {
    if (front.destroyed) return;
    const back = connect(harnessPath);
    track(back);
    for (const [from, to] of [[front, back], [back, front]] as const) {
      joined.add(from);
      from.on("data", (chunk) => to.write(chunk));
      // Ending, not destroying: what is still on its way (the answer to `shutdown`) gets through.
      from.on("close", () => to.end());
      flow(from);
    }
  };
  const server = createServer((front) => {
    front.pause();
    track(front);
    void gate.passed().then(() => join(front));
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve({
        cut: () => sockets.forEach((socket) => socket.destroy()),
        close: () =>
          new Promise<void>((done) => {
            unwatch();
            server.close(() => done());
          }),
      });
    });
  });
}
