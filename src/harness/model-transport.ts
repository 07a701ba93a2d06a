import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { GATEWAY_HOST } from "./model-file.ts";

/** Where one harness's model calls go: its sandbox's gateway socket, or a connection made in this process (a simulated sandbox's). */
export type ModelRoute = { socketPath: string } | { dial: () => Duplex };

/** gateway host → where its calls go. */
const routes = new Map<string, ModelRoute>();
let installing: Promise<void> | undefined;
let next = 0;

/**
 * Send the model calls of one harness to its sandbox's gateway; returns the host its model's
 * `baseUrl` must name, and `ready`, to await before the first call. pi-ai's provider clients use
 * the global `fetch`, so a routing dispatcher is installed once per process: hosts under
 * `gw.swarmd` go to their route with no timeouts (a call the gateway holds for a budget or a
 * provider's back-off may wait for hours), every other origin as before. Several harnesses may
 * share a process (the simulated runtime's). undici is loaded only then: an agent that never ran a
 * turn (an idle one) does not carry its ~8 MiB.
 */
export function routeModelCalls(route: ModelRoute): { host: string; ready(): Promise<void>; release(): void } {
  const host = `h${++next}.${GATEWAY_HOST}`;
  routes.set(host, route);
  return { host, ready: install, release: () => routes.delete(host) };
}

function install(): Promise<void> {
  installing ??= import("undici").then(({ Agent, Pool, setGlobalDispatcher }) => {
    setGlobalDispatcher(
      new Agent({
        factory: (origin, options) => {
          const route = routes.get(new URL(String(origin)).hostname);
          if (!route) return new Pool(origin, options);
          const untimed = { ...options, headersTimeout: 0, bodyTimeout: 0 };
          if ("socketPath" in route) return new Pool(origin, { ...untimed, connect: { socketPath: route.socketPath } });
          // undici speaks HTTP/1.1 over any duplex stream (it types its connector's result as a
          // socket), and expects the connector to answer later, as a socket's connect does.
          return new Pool(origin, {
            ...untimed,
            connect: (_options, callback) => {
              process.nextTick(() => {
                try {
                  callback(null, route.dial() as Socket);
                } catch (err) {
                  callback(err as Error, null);
                }
              });
            },
          });
        },
      }),
    );
  });
  return installing;
}
