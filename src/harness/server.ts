import { existsSync, unlinkSync } from "node:fs";
import { createServer, type Server } from "node:net";
import type { Duplex } from "node:stream";
import type { HarnessAgent } from "./agent.ts";
import { parseClientLine } from "./commands.ts";
import type { EventLog } from "./event-log.ts";
import type { HostCalls } from "./host-calls.ts";
import { jsonLine, readJsonLines } from "./jsonl.ts";
import { type HarnessCommand, isHarnessError, MAX_LINE_BYTES, type ResponseMessage } from "./protocol.ts";

type MaybeAsync<T> = T | Promise<T>;

/** What the endpoint asks of its agent: a `HarnessAgent`, or one whose answers may wait for it to be made (lazy-agent.ts). */
export interface EndpointAgent {
  prompt(text: string): MaybeAsync<ReturnType<HarnessAgent["prompt"]>>;
  steer(text: string): Promise<void>;
  abort(): Promise<void>;
  stats(): MaybeAsync<ReturnType<HarnessAgent["stats"]>>;
  state(): MaybeAsync<ReturnType<HarnessAgent["state"]>>;
}

export interface HarnessEndpointOptions {
  log: EventLog;
  agent: EndpointAgent;
  host: HostCalls;
  /** Called after a `shutdown` command was answered. */
  onShutdown: () => void;
}

export interface HarnessServerOptions extends HarnessEndpointOptions {
  socketPath: string;
}

/**
 * The harness's socket: one client at a time (a new connection replaces the old one). Events are
 * sent to the client only after its `hello`, starting with the logged events it has not seen.
 * Bad input is answered with `success:false`; nothing a client sends can stop the harness except
 * `shutdown`.
 */
export interface HarnessServer {
  /** Send an event line (already logged) to the client, if one is connected and caught up. */
  publish(line: string): void;
  close(): Promise<void>;
}

/** The server without its socket: what serves each connection, wherever it comes from. */
export interface HarnessEndpoint {
  /** Serve a new connection; it replaces the current client. */
  accept(socket: Duplex): void;
  publish(line: string): void;
  /** Drop the current client. */
  disconnect(): void;
}

/** Listen on the Unix socket at `socketPath` (a stale one is replaced) and serve its connections. */
export function startHarnessServer(options: HarnessServerOptions): Promise<HarnessServer> {
  const endpoint = createHarnessEndpoint(options);
  return new Promise((resolve, reject) => {
    if (existsSync(options.socketPath)) unlinkSync(options.socketPath); // stale socket of an earlier harness
    const server: Server = createServer(endpoint.accept);
    server.once("error", reject);
    server.listen(options.socketPath, () => {
      server.off("error", reject);
      resolve({
        publish: endpoint.publish,
        close: () =>
          new Promise<void>((done) => {
            endpoint.disconnect();
            server.close(() => done());
          }),
      });
    });
  });
}

/** The harness's side of its connections (see `HarnessServer`); the simulated runtime hands it connections made in-process. */
export function createHarnessEndpoint(options: HarnessEndpointOptions): HarnessEndpoint {
  const { log, agent, host } = options;
  let client: Duplex | undefined;
  let live = false; // the current client said hello and is caught up

  const send = (socket: Duplex, text: string) => {
    if (!socket.destroyed) socket.write(text);
  };
  const respond = (socket: Duplex, message: Omit<ResponseMessage, "type">) =>
    send(socket, jsonLine({ type: "response", ...message }));

  const onConnection = (socket: Duplex) => {
    client?.destroy();
    client = socket;
    live = false;
    host.attach(undefined);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      if (client !== socket) return;
      client = undefined;
      live = false;
      host.attach(undefined);
    });
    readJsonLines(socket, MAX_LINE_BYTES, (item) => {
      if ("tooLong" in item) {
        respond(socket, {
          command: "unknown",
          success: false,
          error: `line of ${item.tooLong} bytes exceeds ${MAX_LINE_BYTES}`,
        });
        return;
      }
      if (item.line.trim().length === 0) return;
      const parsed = parseClientLine(item.line);
      if (!parsed.ok) {
        respond(socket, { id: parsed.id, command: parsed.command, success: false, error: parsed.error });
        return;
      }
      const message = parsed.message;
      if (message.type === "hello") {
        // Synchronous: the log cannot grow between the replay and going live.
        send(socket, log.linesAfter(message.after));
        live = true;
        host.attach((call) => send(socket, jsonLine(call)));
        return;
      }
      if (message.type === "host_result") {
        if (!host.settle(message))
          respond(socket, {
            id: message.id,
            command: "host_result",
            success: false,
            error: "no pending host call has this id",
          });
        return;
      }
      void runCommand(message).then(
        (data) => {
          respond(socket, {
            id: message.id,
            command: message.type,
            success: true,
            ...(data === undefined ? {} : { data }),
          });
          if (message.type === "shutdown") options.onShutdown();
        },
        (err: unknown) =>
          respond(socket, {
            id: message.id,
            command: message.type,
            success: false,
            error: err instanceof Error ? err.message : String(err),
            ...(isHarnessError(err) ? { code: err.code } : {}),
          }),
      );
    });
  };

  const runCommand = async (command: HarnessCommand): Promise<unknown> => {
    switch (command.type) {
      case "prompt":
        return agent.prompt(command.message);
      case "steer":
        return agent.steer(command.message);
      case "abort":
        return agent.abort();
      case "get_session_stats":
        return agent.stats();
      case "get_state":
        return { ...(await agent.state()), lastHseq: log.lastHseq };
      case "shutdown":
        await agent.abort();
        return undefined;
    }
  };

  return {
    accept: onConnection,
    publish(line) {
      if (client && live) send(client, line);
    },
    disconnect: () => client?.destroy(),
  };
}
