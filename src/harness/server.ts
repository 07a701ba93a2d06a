import { existsSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import type { HarnessAgent } from "./agent.ts";
import { parseClientLine } from "./commands.ts";
import type { EventLog } from "./event-log.ts";
import type { HostCalls } from "./host-calls.ts";
import { jsonLine, readJsonLines } from "./jsonl.ts";
import { HarnessError, MAX_LINE_BYTES, type HarnessCommand, type ResponseMessage } from "./protocol.ts";

export interface HarnessServerOptions {
  socketPath: string;
  log: EventLog;
  agent: HarnessAgent;
  host: HostCalls;
  /** Called after a `shutdown` command was answered. */
  onShutdown: () => void;
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

export function startHarnessServer(options: HarnessServerOptions): Promise<HarnessServer> {
  const { log, agent, host } = options;
  let client: Socket | undefined;
  let live = false; // the current client said hello and is caught up

  const send = (socket: Socket, text: string) => {
    if (!socket.destroyed) socket.write(text);
  };
  const respond = (socket: Socket, message: Omit<ResponseMessage, "type">) => send(socket, jsonLine({ type: "response", ...message }));

  const onConnection = (socket: Socket) => {
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
        respond(socket, { command: "unknown", success: false, error: `line of ${item.tooLong} bytes exceeds ${MAX_LINE_BYTES}` });
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
        if (!host.settle(message)) respond(socket, { id: message.id, command: "host_result", success: false, error: "no pending host call has this id" });
        return;
      }
      void runCommand(message).then(
        (data) => {
          respond(socket, { id: message.id, command: message.type, success: true, ...(data === undefined ? {} : { data }) });
          if (message.type === "shutdown") options.onShutdown();
        },
        (err: unknown) =>
          respond(socket, {
            id: message.id,
            command: message.type,
            success: false,
            error: err instanceof Error ? err.message : String(err),
            ...(err instanceof HarnessError ? { code: err.code } : {}),
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
        return { ...agent.state(), lastHseq: log.lastHseq };
      case "shutdown":
        await agent.abort();
        return undefined;
    }
  };

  return new Promise((resolve, reject) => {
    if (existsSync(options.socketPath)) unlinkSync(options.socketPath); // stale socket of an earlier harness
    const server: Server = createServer(onConnection);
    server.once("error", reject);
    server.listen(options.socketPath, () => {
      server.off("error", reject);
      resolve({
        publish(line) {
          if (client && live) send(client, line);
        },
        close: () =>
          new Promise<void>((done) => {
            client?.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
