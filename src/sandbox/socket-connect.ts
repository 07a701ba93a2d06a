import { connect, type Socket } from "node:net";
import { errorMessage, SwarmError } from "../errors.ts";

/** Longest Unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Connect to a Unix socket; `HARNESS_UNREACHABLE` when nothing answers, the signal's reason on abort. */
export function connectSocket(socketPath: string, signal: AbortSignal): Promise<Socket> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const onAbort = () => {
      socket.destroy();
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => {
      signal.removeEventListener("abort", onAbort);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      signal.removeEventListener("abort", onAbort);
      reject(
        new SwarmError("HARNESS_UNREACHABLE", `Harness socket ${socketPath} does not answer: ${errorMessage(err)}`, {
          cause: err,
        }),
      );
    });
  });
}
