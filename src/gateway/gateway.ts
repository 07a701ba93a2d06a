import { chmod, chown, rename, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { type MemoryControl, memoryControl } from "../harness/memory-control.ts";
import { CONTROL_FILES } from "../harness/protocol.ts";
import { harnessModelFile } from "./harness-model.ts";
import { handleModelCall } from "./model-call.ts";
import type { ModelCaller } from "./model-caller.ts";
import type { ModelCatalog } from "./models.ts";
import { Pacing } from "./pacing.ts";

/** Most connections one sandbox may hold open to its gateway socket. */
const MAX_CONNECTIONS = 16;

/**
 * The model gateway: every harness's model calls come to the daemon over a Unix socket in its
 * sandbox's control folder (`model.sock`, reachable only by the harness's user) and leave for the
 * provider with the daemon's key (see `handleModelCall`). One HTTP server per sandbox, so each
 * call is known to be its agent's by the socket it came on, never by anything the sandbox says.
 * A simulated sandbox's control folder is kept in memory (`MemoryControl`): its model file and its
 * socket are there, and its HTTP server takes connections made in this process.
 */
export class ModelGateway {
  readonly #servers = new Map<string, Served>();
  readonly #closing = new AbortController();
  /** The newest open or close of each folder: they run one after another, so a close never misses an open still under way. */
  readonly #ops = new Map<string, Promise<unknown>>();

  constructor(
    readonly catalog: ModelCatalog,
    readonly pacing: Pacing = new Pacing(),
  ) {}

  /**
   * Serve one sandbox: write its `model.json` and listen on its `model.sock`, both owned by the
   * control folder's owner (the harness's user) and private to it; a folder kept in memory gets
   * both in memory. Opening a folder already served (a restart reconnecting a live sandbox)
   * replaces the socket.
   */
  open(controlDir: string, caller: ModelCaller): Promise<void> {
    return this.#serial(controlDir, async () => {
      await this.#stop(controlDir);
      if (this.#closing.signal.aborted) throw new Error("the model gateway is closed");
      this.#servers.set(controlDir, await this.#listen(controlDir, caller));
    });
  }

  /** Stop serving a sandbox (its calls in flight are cut). */
  close(controlDir: string): Promise<void> {
    return this.#serial(controlDir, () => this.#stop(controlDir));
  }

  /** Daemon shutdown: every socket closed, every call in flight cut. */
  async closeAll(): Promise<void> {
    this.#closing.abort(new Error("the daemon is shutting down"));
    await Promise.all([...new Set([...this.#servers.keys(), ...this.#ops.keys()])].map((dir) => this.close(dir)));
  }

  #serial<T>(controlDir: string, op: () => Promise<T>): Promise<T> {
    const result = (this.#ops.get(controlDir) ?? Promise.resolve()).then(op);
    const settled = result.catch(() => undefined);
    this.#ops.set(controlDir, settled);
    void settled.then(() => {
      if (this.#ops.get(controlDir) === settled) this.#ops.delete(controlDir);
    });
    return result;
  }

  async #listen(controlDir: string, caller: ModelCaller): Promise<Served> {
    const memory = memoryControl(controlDir);
    const oauth =
      caller.script === undefined && caller.model.api === "anthropic-messages" && (await this.#isOAuth(caller));
    const modelFile = JSON.stringify(harnessModelFile(caller.model, oauth));
    const server = createServer({ requestTimeout: 0 }, (req, res) => {
      void handleModelCall(req, res, caller, {
        catalog: this.catalog,
        pacing: this.pacing,
        closing: this.#closing.signal,
      }).catch(() => res.destroy());
    });
    server.on("clientError", (_err, socket) => socket.destroy());
    return memory ? serveInMemory(memory, server, modelFile) : serveOnDisk(controlDir, server, modelFile);
  }

  async #stop(controlDir: string): Promise<void> {
    const served = this.#servers.get(controlDir);
    if (!served) return;
    this.#servers.delete(controlDir);
    await served.stop();
  }

  async #isOAuth(caller: ModelCaller): Promise<boolean> {
    const credentials = await this.catalog.credentials(caller.model).catch(() => undefined);
    return credentials?.apiKey?.includes("sk-ant-oat") ?? false;
  }
}

/** One sandbox's gateway server as served: `stop` cuts its calls in flight and stops taking new ones. */
interface Served {
  stop(): Promise<void>;
}

/** `model.json` written and `model.sock` listened on, both the control folder owner's and private to it. */
async function serveOnDisk(controlDir: string, server: Server, modelFile: string): Promise<Served> {
  const owner = await stat(controlDir);
  const modelPath = join(controlDir, CONTROL_FILES.model);
  await writeFile(`${modelPath}.tmp`, modelFile, { mode: 0o600 });
  await chown(`${modelPath}.tmp`, owner.uid, owner.gid);
  await rename(`${modelPath}.tmp`, modelPath);

  const socketPath = join(controlDir, CONTROL_FILES.modelSocket);
  await rm(socketPath, { force: true });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
  try {
    await chmod(socketPath, 0o600);
    await chown(socketPath, owner.uid, owner.gid);
  } catch (err) {
    server.close();
    throw err;
  }
  return {
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The same server taking connections made in this process, at most `MAX_CONNECTIONS` at once, as the socket would. */
function serveInMemory(memory: MemoryControl, server: Server, modelFile: string): Served {
  const connections = new Set<Duplex>();
  memory.files.set(CONTROL_FILES.model, modelFile);
  const accept = (socket: Duplex) => {
    if (connections.size >= MAX_CONNECTIONS) {
      socket.destroy();
      return;
    }
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
    server.emit("connection", socket);
  };
  memory.listen(CONTROL_FILES.modelSocket, accept);
  return {
    stop: async () => {
      memory.unlisten(CONTROL_FILES.modelSocket, accept);
      for (const socket of connections) socket.destroy();
    },
  };
}
