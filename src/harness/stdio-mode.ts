import { Console } from "node:console";
import type { Duplex } from "node:stream";
import { Writable } from "node:stream";
import { CHANNELS } from "./mux/channels.ts";
import { createMux } from "./mux/mux.ts";
import { createHarnessEndpoint, type HarnessEndpointOptions, type HarnessServer } from "./server.ts";

/**
 * The harness served over its own stdin and stdout (`--stdio`), as a cluster sandbox's supervisor
 * starts it (src/harness/supervisor.ts): each `harness` channel the supervisor opens is served as a
 * socket connection would be, and `dialModel` opens a `model` channel for each connection of the
 * harness's model calls. Nothing here is a socket or a file another process could open. stdout
 * carries only the stream from now on: whatever else in the process writes to it (console.log in a
 * package) goes to stderr. `onClosed`: the supervisor's end of the stream is gone.
 */
export function serveOverStdio(
  options: HarnessEndpointOptions & { onClosed(): void },
): HarnessServer & { dialModel(): Duplex } {
  const stdout = process.stdout;
  const writeStdout = stdout.write.bind(stdout) as (chunk: Buffer, done: (err?: Error | null) => void) => boolean;
  const output = new Writable({
    write: (chunk: Buffer, _encoding, done) => void writeStdout(chunk, done),
  });
  stdout.write = process.stderr.write.bind(process.stderr) as typeof stdout.write;
  globalThis.console = new Console(process.stderr, process.stderr);

  const endpoint = createHarnessEndpoint(options);
  const mux = createMux({
    input: process.stdin,
    output,
    firstId: 2,
    live: true,
    log: (message) => process.stderr.write(`harness: stream: ${message}\n`),
    onOpen(name, channel) {
      if (name === CHANNELS.harness) endpoint.accept(channel);
      else channel.destroy();
    },
    onControl: () => undefined,
    onEnd: () => options.onClosed(),
  });
  mux.control({ t: "ready" });
  return {
    publish: endpoint.publish,
    dialModel: () => mux.open(CHANNELS.model),
    close: async () => {
      endpoint.disconnect();
    },
  };
}
