import { connect } from "node:net";

/** Whether something accepts connections on the Unix socket (a harness that has started listening). */
export function socketAccepts(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
