import type { Duplex } from "node:stream";
import { streamPair } from "./stream-pair.ts";

/**
 * A control folder that exists only in this process's memory: the simulated runtime's, whose
 * sandboxes run their harness inside the daemon. What the daemon and a harness exchange through a
 * real control folder (`model.json`, the `model.sock` gateway) goes through one of these instead,
 * so a simulated sandbox touches no file and opens no socket. The runtime opens one per sandbox
 * under the path its `controlDir` names; the model gateway and the harness look it up by that path.
 */
export interface MemoryControl {
  /** Files by name (`model.json`). */
  readonly files: Map<string, string>;
  /** Serve a socket name: every `dial` of it hands `accept` the far end of a new connection. */
  listen(name: string, accept: (socket: Duplex) => void): void;
  /** Stop serving a socket name with `accept` (a newer listener stays); connections already made are their owners' to end. */
  unlisten(name: string, accept: (socket: Duplex) => void): void;
  /** A new connection to the socket name; throws `ECONNREFUSED` when nothing serves it. */
  dial(name: string): Duplex;
}

const folders = new Map<string, MemoryControl>();

/** The in-memory control folder at `dir`, made when there is none. */
export function openMemoryControl(dir: string): MemoryControl {
  const found = folders.get(dir);
  if (found) return found;
  const listeners = new Map<string, (socket: Duplex) => void>();
  const control: MemoryControl = {
    files: new Map(),
    listen: (name, accept) => void listeners.set(name, accept),
    unlisten(name, accept) {
      if (listeners.get(name) === accept) listeners.delete(name);
    },
    dial(name) {
      const accept = listeners.get(name);
      if (!accept) throw Object.assign(new Error(`connect ECONNREFUSED ${dir}/${name}`), { code: "ECONNREFUSED" });
      const [near, far] = streamPair();
      accept(far);
      return near;
    },
  };
  folders.set(dir, control);
  return control;
}

/** The in-memory control folder at `dir`, or `undefined` for a folder on disk. */
export function memoryControl(dir: string): MemoryControl | undefined {
  return folders.get(dir);
}

/** Forget the folder at `dir` (its sandbox was closed). */
export function dropMemoryControl(dir: string): void {
  folders.delete(dir);
}
