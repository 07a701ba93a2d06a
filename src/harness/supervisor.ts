/**
 * The supervisor: the main process of a cluster sandbox (`dist/harness/supervisor.cjs`, run as the
 * harness's user, see src/sandbox/stream/cluster-command.ts). A cluster sandbox shares no folder
 * with the daemon: everything goes over the container's stdio, which the daemon attaches to,
 * multiplexed (src/harness/mux/). The supervisor answers the daemon's control requests (init,
 * inputs, start, hibernate, status: supervisor-requests.ts), starts the harness in stdio mode as
 * its child and relays channels between the two: `harness` connections from the daemon to the
 * harness, `model` connections from the harness to the daemon. Each hello (a new attach) closes
 * every channel of the attach before. Nothing the daemon's side of the stream carries can end it:
 * a bad line or request is logged to stderr and answered or dropped.
 *
 *   node <harness flags> supervisor.cjs [--control /control] [--work /work] [--inputs /inputs]
 *        [--agent-uid N --agent-gid N] [--boot <dir>/boot.cjs]
 *
 * The harness is started with this process's node and node flags.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CHANNELS, type ControlAnswer, ControlRequestSchema, MAX_REQUEST_BODY_BYTES } from "./mux/control.ts";
import type { ControlFrame } from "./mux/frames.ts";
import { createMux, type MuxChannel, relay } from "./mux/mux.ts";
import { createSupervisorRequests } from "./supervisor-requests.ts";

const log = (message: string) => process.stderr.write(`supervisor: ${message}\n`);

function main(): void {
  const { values } = parseArgs({
    options: {
      control: { type: "string", default: "/control" },
      work: { type: "string", default: "/work" },
      inputs: { type: "string", default: "/inputs" },
      "agent-uid": { type: "string" },
      "agent-gid": { type: "string" },
      boot: { type: "string", default: join(__dirname, "boot.cjs") },
    },
  });
  const agentUid = values["agent-uid"];
  const harnessArgv = [
    process.execPath,
    ...process.execArgv,
    values.boot,
    "--control",
    values.control,
    "--work",
    values.work,
    ...(agentUid ? ["--agent-uid", agentUid, "--agent-gid", values["agent-gid"] ?? agentUid] : []),
    "--stdio",
  ];

  /** Request bodies sent on `request` channels, by channel id. */
  const bodies = new Map<number, Promise<string>>();
  /** Which attach a request came on: an answer is sent only to the attach that asked. */
  let attach = 0;

  const requests = createSupervisorRequests({
    controlDir: values.control,
    workDir: values.work,
    inputsDir: values.inputs,
    harnessArgv,
    log,
    onModel(channel) {
      if (daemon.live) relay(channel, daemon.open(CHANNELS.model));
      else channel.destroy();
    },
  });

  const answer = async (frame: ControlFrame) => {
    const asked = attach;
    const id = frame.id;
    if (typeof id !== "number" || !Number.isSafeInteger(id)) return log("dropped a request without an id");
    let result: ControlAnswer;
    try {
      const { c: _c, t: _t, id: _id, body, ...inline } = frame;
      const text =
        typeof body === "number" ? await (bodies.get(body) ?? Promise.reject(new Error("no such body"))) : undefined;
      if (typeof body === "number") bodies.delete(body);
      const parsed = ControlRequestSchema.safeParse(text === undefined ? inline : JSON.parse(text));
      result = parsed.success
        ? await requests.handle(parsed.data)
        : { ok: false, error: `not a control request: ${parsed.error.issues[0]?.message ?? "invalid"}` };
    } catch (err) {
      result = { ok: false, error: (err as Error).message };
    }
    if (asked === attach) daemon.control({ t: "res", id, ...result });
  };

  const daemon = createMux({
    input: process.stdin,
    output: process.stdout,
    firstId: 2,
    live: false,
    log,
    onOpen(name, channel) {
      if (name === CHANNELS.harness) {
        const harness = requests.openHarness();
        if (harness) relay(channel, harness);
        else channel.destroy();
      } else if (name === CHANNELS.request) {
        const body = readBody(channel);
        body.catch(() => undefined);
        bodies.set(channel.id, body);
      } else {
        log(`closed a channel named ${JSON.stringify(name).slice(0, 80)}, which the supervisor does not serve`);
        channel.destroy();
      }
    },
    onControl(frame) {
      if (frame.t === "hello") {
        if (typeof frame.nonce !== "string" || frame.nonce.length > 128) return log("dropped a hello without a nonce");
        attach++;
        daemon.reset();
        bodies.clear();
        daemon.live = true;
        daemon.control({ t: "hello", nonce: frame.nonce });
        return;
      }
      if (!daemon.live) return;
      if (frame.t === "req") void answer(frame);
      else log(`dropped a control frame of type ${JSON.stringify(frame.t).slice(0, 40)}`);
    },
    onEnd(error) {
      // The container's stdin stays open across attaches: it ends only when the container does (or a test's pipe).
      log(`the daemon's stream ended (${error.message}): stopping`);
      void requests.stop().finally(() => process.exit(0));
    },
  });
}

/** A `request` channel's content, at most `MAX_REQUEST_BODY_BYTES`. */
function readBody(channel: MuxChannel): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    channel.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BODY_BYTES) {
        channel.destroy();
        reject(new Error(`a request body over ${MAX_REQUEST_BODY_BYTES} bytes`));
      } else chunks.push(chunk);
    });
    channel.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    channel.on("close", () => reject(new Error("the request's body was cut off")));
    channel.on("error", () => undefined);
  });
}

// The last guard of "nothing on the stream ends the supervisor": an error a handler missed is logged.
process.on("uncaughtException", (err) => log(`unexpected error: ${err.stack ?? err.message}`));
process.stdout.on("error", (err) => log(`stdout: ${err.message}`));
main();
