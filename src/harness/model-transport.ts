import { Agent, Pool, setGlobalDispatcher } from "undici";
import { GATEWAY_HOST } from "../gateway/harness-model.ts";

/** gateway host → the Unix socket its calls go to. */
const routes = new Map<string, string>();
let installed = false;
let next = 0;

/**
 * Send the model calls of one harness to its sandbox's gateway socket; returns the host its
 * model's `baseUrl` must name. pi-ai's provider clients use the global `fetch`, so a routing
 * dispatcher is installed once per process: hosts under `gw.swarmd` go to their socket with no
 * timeouts (a call the gateway holds for a budget or a provider's back-off may wait for hours),
 * every other origin as before. Several harnesses may share a process (the memory runtime's).
 */
export function routeModelCalls(socketPath: string): { host: string; release(): void } {
  if (!installed) {
    setGlobalDispatcher(
      new Agent({
        factory: (origin, options) => {
          const socket = routes.get(new URL(String(origin)).hostname);
          return new Pool(origin, socket ? { ...options, headersTimeout: 0, bodyTimeout: 0, connect: { socketPath: socket } } : options);
        },
      }),
    );
    installed = true;
  }
  const host = `h${++next}.${GATEWAY_HOST}`;
  routes.set(host, socketPath);
  return { host, release: () => routes.delete(host) };
}
