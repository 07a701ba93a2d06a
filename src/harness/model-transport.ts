import { GATEWAY_HOST } from "../gateway/harness-model.ts";

/** gateway host → the Unix socket its calls go to. */
const routes = new Map<string, string>();
let installing: Promise<void> | undefined;
let next = 0;

/**
 * Send the model calls of one harness to its sandbox's gateway socket; returns the host its
 * model's `baseUrl` must name, and `ready`, to await before the first call. pi-ai's provider
 * clients use the global `fetch`, so a routing dispatcher is installed once per process: hosts
 * under `gw.swarmd` go to their socket with no timeouts (a call the gateway holds for a budget or a
 * provider's back-off may wait for hours), every other origin as before. Several harnesses may
 * share a process (the memory runtime's). undici is loaded only then: an agent that never ran a
 * turn (an idle one) does not carry its ~8 MiB.
 */
export function routeModelCalls(socketPath: string): { host: string; ready(): Promise<void>; release(): void } {
  const host = `h${++next}.${GATEWAY_HOST}`;
  routes.set(host, socketPath);
  return { host, ready: install, release: () => routes.delete(host) };
}

function install(): Promise<void> {
  installing ??= import("undici").then(({ Agent, Pool, setGlobalDispatcher }) => {
    setGlobalDispatcher(
      new Agent({
        factory: (origin, options) => {
          const socket = routes.get(new URL(String(origin)).hostname);
          return new Pool(origin, socket ? { ...options, headersTimeout: 0, bodyTimeout: 0, connect: { socketPath: socket } } : options);
        },
      }),
    );
  });
  return installing;
}
