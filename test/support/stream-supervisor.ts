import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import { ModelGateway } from "../../src/gateway/gateway.ts";
import type { ModelCaller, ScriptCursor } from "../../src/gateway/model-caller.ts";
import { loadModelCatalog } from "../../src/gateway/models.ts";
import { memoryControl, openMemoryControl } from "../../src/harness/memory-control.ts";
import { relay } from "../../src/harness/mux/mux.ts";
import { CONTROL_FILES } from "../../src/harness/protocol.ts";
import type { SandboxStreamIo } from "../../src/sandbox/stream/sandbox-stream.ts";
import type { ScriptStep } from "../../src/spec/agent-spec.ts";
import { scriptCaller } from "./script-gateway.ts";

/**
 * A cursor that answers a call cut off before its answer was delivered with the same step again,
 * as the daemon's durable cursor does: a model call lost with a dropped attach is retried by pi.
 */
function retryingCursor(): ScriptCursor {
  let next = 0;
  let open: { hash: string; index: number } | undefined;
  return {
    take: async (hash) => {
      if (open?.hash !== hash) open = { hash, index: next++ };
      return open.index;
    },
    delivered: async (index) => {
      if (open?.index === index) open = undefined;
    },
  };
}

/**
 * What the cluster runtime does for a sandbox's model calls: an in-memory control folder served by
 * the model gateway, answering `script`; `model.json` is what `init` carries, and `model(channel)`
 * connects a `model` channel of the stream to the gateway.
 */
export async function streamGateway(script: readonly ScriptStep[]) {
  const dir = `/memory/stream-test/${randomUUID()}`;
  openMemoryControl(dir);
  const gateway = new ModelGateway(loadModelCatalog());
  const caller: ModelCaller = { ...scriptCaller(script), cursor: retryingCursor() };
  await gateway.open(dir, caller);
  const memory = memoryControl(dir)!;
  return {
    modelFile: memory.files.get(CONTROL_FILES.model)!,
    model: (channel: import("node:stream").Duplex) => relay(channel, memory.dial(CONTROL_FILES.modelSocket)),
    close: () => gateway.closeAll(),
  };
}

/** An attach to a process's stdio that can be cut, as a dropped connection to a container's: what was on its way is lost. */
export function attachRelay(stdin: NodeJS.WritableStream, stdout: NodeJS.ReadableStream) {
  const input = new PassThrough();
  const output = new PassThrough();
  const toProcess = (chunk: Buffer) => void stdin.write(chunk);
  const fromProcess = (chunk: Buffer) => void output.write(chunk);
  input.on("data", toProcess);
  stdout.on("data", fromProcess);
  const io: SandboxStreamIo = { input, output };
  return {
    io,
    /** Write raw bytes to the process, as a broken or hostile daemon could. */
    raw: (text: string) => void stdin.write(text),
    cut() {
      input.off("data", toProcess);
      stdout.off("data", fromProcess);
      output.end();
    },
  };
}
