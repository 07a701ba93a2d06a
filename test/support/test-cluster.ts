/**
 * The test cluster `scripts/test-cluster.sh up` starts (three Docker engines in network namespaces
 * on this machine, one swarm), as cluster tests see it: its settings from the exported environment,
 * each node's engine over its unix socket, and the levers a test pulls (cut a node's link, change a
 * node's availability, wait for the swarm to call a node down or ready). Nodes are numbered from 0
 * in the order of SWARM_CLUSTER_NODES; node 0 is the manager. docs/testing.md, "The test cluster".
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import Docker from "dockerode";
import { pollUntil } from "./poll.ts";

export type NodeAvailability = "active" | "pause" | "drain";
export type NodeState = "ready" | "down" | "unknown" | "disconnected";

export interface ClusterNode {
  /** The swarm's node id. */
  id: string;
  /** The node engine's TLS address, as SWARM_CLUSTER_NODES gives it (tcp://198.18.0.1N:2376). */
  address: string;
  /** The node engine's unix socket (no TLS), for tests to look at the node from outside. */
  socket: string;
  /** The host side of the node's veth: `ip link set <link> down` cuts the node off. */
  link: string;
  /** The node's network namespace. */
  netns: string;
}

export interface ClusterSettings {
  manager: string;
  tlsDir: string;
  /** The script's state folder. */
  state: string;
  nodes: ClusterNode[];
  /** The swarm's dispatcher heartbeat: a node unheard for about 3 of these is marked down. */
  heartbeatMs: number;
  /** The variables the daemon needs to run on this cluster (SWARM_RUNTIME and SWARM_CLUSTER_*). */
  env: Record<string, string>;
}

const listOf = (value: string | undefined): string[] => (value ? value.split(",") : []);

/**
 * The cluster's settings from the environment `scripts/test-cluster.sh up` exports (as `make
 * test-cluster` runs the tests), or undefined when the tests run without one.
 */
export function clusterSettings(env: NodeJS.ProcessEnv = process.env): ClusterSettings | undefined {
  const { SWARM_CLUSTER_MANAGER: manager, SWARM_CLUSTER_TLS_DIR: tlsDir, SWARM_TEST_CLUSTER_STATE: state } = env;
  if (env.SWARM_RUNTIME !== "cluster" || !manager || !tlsDir || !state) return undefined;
  const entries = listOf(env.SWARM_CLUSTER_NODES);
  const sockets = listOf(env.SWARM_TEST_CLUSTER_SOCKETS);
  const links = listOf(env.SWARM_TEST_CLUSTER_LINKS);
  const netns = listOf(env.SWARM_TEST_CLUSTER_NETNS);
  if (entries.length === 0 || [sockets, links, netns].some((list) => list.length !== entries.length)) return undefined;
  const nodes = entries.map((entry, i) => {
    const at = entry.indexOf("=");
    const [socket = "", link = "", ns = ""] = [sockets[i], links[i], netns[i]];
    return { id: entry.slice(0, at), address: entry.slice(at + 1), socket, link, netns: ns };
  });
  const clusterEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && (name === "SWARM_RUNTIME" || name.startsWith("SWARM_CLUSTER_")))
      clusterEnv[name] = value;
  return {
    manager,
    tlsDir,
    state,
    nodes,
    heartbeatMs: Number(env.SWARM_TEST_CLUSTER_HEARTBEAT_MS ?? 5000),
    env: clusterEnv,
  };
}

/**
 * Declare a cluster suite when the test cluster is up; otherwise one skipped test saying how to
 * run it, or a failing one when SWARM_TEST_CLUSTER_REQUIRED=1 (`make test-cluster` sets it).
 */
export async function whenCluster(name: string, declare: (cluster: ClusterSettings) => void | Promise<void>) {
  const cluster = clusterSettings();
  if (cluster !== undefined) return await declare(cluster);
  const reason = 'no test cluster: run `make test-cluster`, or `eval "$(scripts/test-cluster.sh up)"` first';
  if (process.env.SWARM_TEST_CLUSTER_REQUIRED === "1") test(name, () => assert.fail(reason));
  else test(name, { skip: reason }, () => undefined);
}

function settingsOrFail(): ClusterSettings {
  const cluster = clusterSettings();
  if (cluster === undefined) throw new Error("no test cluster in the environment (scripts/test-cluster.sh up)");
  return cluster;
}

function nodeAt(index: number): ClusterNode {
  const node = settingsOrFail().nodes[index];
  if (node === undefined) throw new Error(`the test cluster has no node ${index}`);
  return node;
}

/** Node `index`'s Docker engine, over its unix socket. */
export function nodeEngine(index: number): Docker {
  return new Docker({ socketPath: nodeAt(index).socket });
}

/** The manager's engine (node 0), over its unix socket: the swarm's API. */
export function managerEngine(): Docker {
  return nodeEngine(0);
}

/** The index of the node with swarm id `nodeId`. */
export function nodeIndex(nodeId: string): number {
  const index = settingsOrFail().nodes.findIndex((node) => node.id === nodeId);
  if (index < 0) throw new Error(`no node ${nodeId} in the test cluster`);
  return index;
}

const run = promisify(execFile);

/** Cut node `index` off the others and the host: its veth's host side goes down (its engine runs on). */
export async function cutLink(index: number): Promise<void> {
  await run("ip", ["link", "set", nodeAt(index).link, "down"]);
}

/** Undo `cutLink`. */
export async function restoreLink(index: number): Promise<void> {
  await run("ip", ["link", "set", nodeAt(index).link, "up"]);
}

/** Set a node's availability through the manager (`docker node update --availability`). */
export async function setAvailability(nodeId: string, availability: NodeAvailability): Promise<void> {
  const node = managerEngine().getNode(nodeId);
  const info = await node.inspect();
  await node.update({ _query: { version: info.Version.Index }, _body: { ...info.Spec, Availability: availability } });
}

/** The swarm's state of a node now, as the manager sees it. */
export async function nodeState(nodeId: string): Promise<NodeState> {
  const info = await managerEngine().getNode(nodeId).inspect();
  return info.Status.State;
}

/**
 * Wait until the manager reports the node `state`; fails past `timeoutMs` saying the last state.
 * Resolves with the milliseconds it took.
 */
export async function waitNodeState(nodeId: string, state: NodeState, timeoutMs = 60_000): Promise<number> {
  const start = Date.now();
  await pollUntil(
    () => nodeState(nodeId),
    (now) => now === state,
    `node ${nodeId} to be ${state}`,
    timeoutMs,
  );
  return Date.now() - start;
}
