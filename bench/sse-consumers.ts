/**
 * Child process of the service benchmark: N real SSE clients on loopback, outside the daemon's
 * process so they do not share its event loop. Argv: url, clients, Last-Event-ID, target seq.
 * Messages to the parent (IPC): `ready` once every client has its 200, then `done` once every
 * client has received the target seq (or `failed` when a connection ends or errs before that).
 * Clients only split frames and read ids (no JSON parsing), so they stay cheap beside the server.
 */
import { request } from "node:http";

export type ConsumerMessage =
  | { type: "ready" }
  | { type: "done"; ms: number; frames: number; gaps: number }
  | { type: "failed"; reason: string };

const [url = "", clientsArg = "10", lastIdArg = "0", targetArg = "0"] = process.argv.slice(2);
const clients = Number(clientsArg);
const target = Number(targetArg);
const send = (m: ConsumerMessage) => process.send?.(m);

let ready = 0;
let finished = 0;
let frames = 0;
let gaps = 0;
let failed = false;
const start = performance.now();

function fail(reason: string): void {
  if (failed || finished === clients) return;
  failed = true;
  send({ type: "failed", reason });
}

function open(index: number): void {
  let lastId = Number(lastIdArg);
  let tail = "";
  let reached = false;
  const req = request(url, { headers: { accept: "text/event-stream", "last-event-id": lastIdArg } }, (res) => {
    if (res.statusCode !== 200) return fail(`client ${index}: status ${res.statusCode}`);
    if (++ready === clients) send({ type: "ready" });
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      const text = tail + chunk;
      let at = 0;
      for (let end = text.indexOf("\n\n", at); end >= 0; end = text.indexOf("\n\n", at)) {
        const frame = text.slice(at, end);
        at = end + 2;
        if (!frame.startsWith("id: ")) continue; // heartbeat comments, ephemeral events
        const id = Number(frame.slice(4, frame.indexOf("\n")));
        if (id !== lastId + 1) gaps++;
        lastId = id;
        frames++;
      }
      tail = text.slice(at);
      if (!reached && lastId >= target) {
        reached = true;
        if (++finished === clients) send({ type: "done", ms: performance.now() - start, frames, gaps });
      }
    });
    res.on("close", () => reached || fail(`client ${index}: stream closed at id ${lastId} of ${target}`));
  });
  req.on("error", (err) => fail(`client ${index}: ${err.message}`));
  req.end();
}

for (let i = 0; i < clients; i++) open(i);
process.on("disconnect", () => process.exit(0));
