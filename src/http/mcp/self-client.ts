import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import type { FastifyInstance } from "fastify";
import { createSwarmClient, type SwarmClient } from "../../client/swarm-client.ts";
import { SwarmError } from "../../errors.ts";

/**
 * The client `/mcp`'s tools call the routes with: the daemon's own address, with its token, so a
 * tool goes through the same routes, validation, token and Host checks as a stdio bridge's (and is
 * logged and counted as they are). Made at its first use, once the daemon listens: its port is
 * known only then (`SWARM_PORT=0`, the tests), and a session that only lists tools needs none.
 *
 * `host` is the daemon's SWARM_HOST: a name is called by that name (the Host check serves it); a
 * wildcard address on loopback; otherwise the address the daemon listens on.
 */
export function selfClient(app: FastifyInstance, host: string | undefined, token: string | undefined): SwarmClient {
  let client: SwarmClient | undefined;
  const made = () => {
    client ??= createSwarmClient({ url: selfUrl(app, host), token, source: "the daemon's own address" });
    return client;
  };
  // The client's members are plain functions over its endpoint (no `this`): each is looked up on the
  // client made at the first use.
  return new Proxy({} as SwarmClient, { get: (_target, member) => Reflect.get(made(), member) });
}

function selfUrl(app: FastifyInstance, host: string | undefined): string {
  const address = app.server.address();
  if (address === null || typeof address === "string")
    throw new SwarmError("INTERNAL", "The daemon does not listen on a TCP port: /mcp's tools cannot call its routes.");
  return callBackUrl(address, host);
}

/** Where the daemon listening at `address` (SWARM_HOST `host`) calls itself. */
export function callBackUrl(address: Pick<AddressInfo, "address" | "port">, host: string | undefined): string {
  const configured = host?.replace(/^\[(.*)\]$/, "$1");
  // `localhost` may resolve to an address it does not listen on: the one it does is the same machine.
  let name = configured === undefined || configured.toLowerCase() === "localhost" ? address.address : configured;
  if (name === "0.0.0.0") name = "127.0.0.1";
  if (name === "::") name = "::1";
  return `http://${isIP(name) === 6 ? `[${name}]` : name}:${address.port}`;
}
