import { existsSync, readFileSync } from "node:fs";
import { BlockList, isIP } from "node:net";
import { join } from "node:path";
import type Docker from "dockerode";
import { SwarmError } from "../../errors.ts";

/** The cluster runtime's settings (`SWARM_CLUSTER_*`, docs/cluster.md). */
export interface ClusterSettings {
  /** The swarm manager's engine: `unix:///path`, `tcp://host:port` (TLS), or `ssh://user@host`. */
  manager: string;
  /** Node id → the address of that node's own engine (attach, exec, pause, archives). */
  nodes: Record<string, string>;
  /** `ca.pem`, `cert.pem`, `key.pem`, optionally in a subfolder per node id. */
  tlsDir?: string;
  /** How long a child waits to be placed on its parent's node before it is placed anywhere. */
  localWaitMs: number;
  /** An operator-made swarm network for specs with `network: true`; unset, such specs are refused. */
  network?: string;
  /** The share of an agent's limits its sandbox reserves on its node (1: no overcommit). */
  reserve: number;
}

/** `SWARM_CLUSTER_NODES`: `nodeId=tcp://addr:port,…`. */
export function parseClusterNodes(value: string): Record<string, string> {
  const nodes: Record<string, string> = {};
  for (const part of value
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = part.indexOf("=");
    if (at <= 0 || at === part.length - 1)
      throw new SwarmError(
        "CONFIG_INVALID",
        `invalid configuration: SWARM_CLUSTER_NODES: "${part}" is not nodeId=address (for example abc123=tcp://10.0.0.2:2376)`,
      );
    nodes[part.slice(0, at)] = part.slice(at + 1);
  }
  return nodes;
}

/** Loopback, and the benchmarking range 198.18.0.0/15 the test cluster's namespaces use: the only places plain TCP may go. */
const PLAIN_TCP = new BlockList();
PLAIN_TCP.addSubnet("127.0.0.0", 8, "ipv4");
PLAIN_TCP.addSubnet("198.18.0.0", 15, "ipv4");
PLAIN_TCP.addAddress("::1", "ipv6");

function plainTcpAllowed(host: string): boolean {
  const family = isIP(host);
  return family !== 0 && PLAIN_TCP.check(host, family === 4 ? "ipv4" : "ipv6");
}

/** The TLS files for one engine: `<dir>/<nodeId>/` when that folder exists, else `<dir>/`. Never logged. */
function tlsFiles(dir: string, nodeId: string | undefined): { ca: Buffer; cert: Buffer; key: Buffer } {
  const own = nodeId ? join(dir, nodeId) : undefined;
  const base = own && existsSync(own) ? own : dir;
  const read = (name: string) => {
    try {
      return readFileSync(join(base, name));
    } catch (err) {
      throw new SwarmError(
        "CONFIG_INVALID",
        `invalid configuration: SWARM_CLUSTER_TLS_DIR: cannot read ${join(base, name)} (${(err as NodeJS.ErrnoException).code ?? err})`,
      );
    }
  };
  return { ca: read("ca.pem"), cert: read("cert.pem"), key: read("key.pem") };
}

/**
 * dockerode's options for one engine address. `tcp://` uses TLS from the TLS folder; without one,
 * plain TCP is allowed only to loopback and test namespaces (198.18.0.0/15): an engine's API is
 * root on its node.
 */
export function engineOptions(
  address: string,
  settings: Pick<ClusterSettings, "tlsDir">,
  what: string,
  nodeId?: string,
): Docker.DockerOptions {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new SwarmError("CONFIG_INVALID", `invalid configuration: ${what}: "${address}" is not an engine address`);
  }
  if (url.protocol === "unix:") return { socketPath: url.pathname };
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (url.protocol === "ssh:") {
    return {
      protocol: "ssh",
      host,
      port: url.port ? Number(url.port) : 22,
      username: url.username || undefined,
      sshOptions: { agent: process.env.SSH_AUTH_SOCK },
    } as Docker.DockerOptions;
  }
  if (url.protocol !== "tcp:" && url.protocol !== "https:")
    throw new SwarmError(
      "CONFIG_INVALID",
      `invalid configuration: ${what}: "${address}" must be unix://, tcp:// or ssh://`,
    );
  const port = url.port ? Number(url.port) : 2376;
  if (settings.tlsDir) return { protocol: "https", host, port, ...tlsFiles(settings.tlsDir, nodeId) };
  if (!plainTcpAllowed(host))
    throw new SwarmError(
      "CONFIG_INVALID",
      `invalid configuration: ${what}: plain TCP to ${host} would hand root on that node to anyone on the path; set SWARM_CLUSTER_TLS_DIR (ca.pem, cert.pem, key.pem)`,
    );
  return { protocol: "http", host, port };
}
