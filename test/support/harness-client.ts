import type { Duplex } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { HarnessEventMessage, HarnessMessage, ResponseMessage } from "../../src/harness/protocol.ts";
import { createWaitList } from "./wait-list.ts";

/** A bare-hands harness client for tests: JSON lines out, every line in, split on LF only. */
export interface TestHarnessClient {
  /** Every message received, in order. */
  readonly messages: HarnessMessage[];
  readonly events: HarnessEventMessage[];
  send(message: Record<string, unknown>): void;
  /** Send `hello` (replay events after `after`, then live ones). */
  hello(after?: number): void;
  /** Send a command with a fresh id and resolve with its response. */
  request(command: { type: string; [key: string]: unknown }, timeoutMs?: number): Promise<ResponseMessage>;
  /** Resolve with the first message (received or future) that matches. */
  waitFor(match: (m: HarnessMessage) => boolean, timeoutMs?: number, what?: string): Promise<HarnessMessage>;
  /** Send a prompt and resolve with the turn's `turn_settled` event and its tools' outputs. */
  prompt(message: string, timeoutMs?: number): Promise<{ settled: HarnessEventMessage; toolOutputs: string[] }>;
  /** Resolves when the harness side closed the connection. */
  readonly closed: Promise<void>;
  close(): void;
}

let nextId = 0;

export function createTestHarnessClient(socket: Duplex): TestHarnessClient {
  const messages: HarnessMessage[] = [];
  const events: HarnessEventMessage[] = [];
  const waits = createWaitList();
  const decoder = new StringDecoder("utf8");
  let buffer = "";
  socket.on("data", (chunk: Buffer) => {
    buffer += decoder.write(chunk);
    for (let newline = buffer.indexOf("\n"); newline !== -1; newline = buffer.indexOf("\n")) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() === "") continue;
      const message = JSON.parse(line) as HarnessMessage;
      messages.push(message);
      if (message.type === "event") events.push(message);
    }
    waits.wake();
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => undefined);

  const send = (message: Record<string, unknown>) => void socket.write(`${JSON.stringify(message)}\n`);
  const waitFor = (match: (m: HarnessMessage) => boolean, timeoutMs = 20_000, what = "a matching message") =>
    waits.until(
      () => messages.find(match),
      timeoutMs,
      () =>
        `timed out after ${timeoutMs} ms waiting for ${what}; received: ${messages.map((m) => (m.type === "event" ? m.event : m.type)).join(",")}`,
    );

  const client: TestHarnessClient = {
    messages,
    events,
    send,
    hello: (after = 0) => send({ type: "hello", after }),
    async request(command, timeoutMs) {
      const id = `t${++nextId}`;
      send({ ...command, id });
      return (await waitFor(
        (m) => m.type === "response" && m.id === id,
        timeoutMs,
        `the response to ${command.type}`,
      )) as ResponseMessage;
    },
    waitFor,
    async prompt(message, timeoutMs) {
      const from = events.at(-1)?.hseq ?? 0;
      const response = await client.request({ type: "prompt", message }, timeoutMs);
      if (!response.success) throw new Error(`prompt rejected: ${response.error}`);
      const settled = (await waitFor(
        (m) => m.type === "event" && m.event === "turn_settled" && m.hseq > from,
        timeoutMs,
        "turn_settled",
      )) as HarnessEventMessage;
      const toolOutputs = events
        .filter((e) => e.event === "tool_end" && e.hseq > from && e.hseq < settled.hseq)
        .map((e) => String((e.data as { output?: unknown }).output ?? ""));
      return { settled, toolOutputs };
    },
    closed,
    close: () => socket.destroy(),
  };
  return client;
}
