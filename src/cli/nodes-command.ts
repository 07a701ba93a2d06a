import type { NodeView } from "../swarm-api.ts";
import { parseCommandArgs, usage } from "./args.ts";
import { type CliContext, COMMON_OPTIONS, printJson } from "./cli-context.ts";
import { EXIT, type ExitCode } from "./exit-codes.ts";
import { columns, oneLine } from "./table-format.ts";

/**
 * `swarm nodes`: GET /nodes, the machines sandboxes run on, as a table: id, hostname, the swarm's
 * state and availability, whether the daemon reaches the node's engine, the service's live
 * sandboxes there, and the CPUs and memory their limits reserve out of the node's. A node with a
 * `reason` gets a line under the table saying it. `--json` prints the service's `{"nodes": [...]}`.
 */
export async function nodesCommand(ctx: CliContext, args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseCommandArgs("nodes", args, COMMON_OPTIONS);
  if (positionals.length > 0) throw usage("nodes", `unexpected argument ${JSON.stringify(positionals[0])}`);
  const answer = await ctx.client(values.url).listNodes({ signal: ctx.signal });
  if (values.json) printJson(ctx.io, answer);
  else ctx.io.out(`${nodeTable(answer.nodes).join("\n")}\n`);
  return EXIT.OK;
}

/** One line per node, then one per node that says why it is unreachable or unusable. */
export function nodeTable(nodes: readonly NodeView[]): string[] {
  const rows = nodes.map((n) => [
    oneLine(n.id),
    oneLine(n.hostname),
    n.state,
    n.availability,
    n.engine,
    String(n.sandboxes),
    `${Number(n.reservedCpus.toFixed(2))}/${n.cpus}`,
    `${gib(n.reservedMemoryMiB)}/${gib(n.memoryMiB)} GiB`,
  ]);
  const table = columns([
    [
      "NODE",
      "HOSTNAME",
      "STATE",
      "AVAILABILITY",
      "ENGINE",
      "SANDBOXES",
      "CPUS (reserved/all)",
      "MEMORY (reserved/all)",
    ],
    ...rows,
  ]);
  const reasons = nodes.flatMap((n) => (n.reason ? [`${oneLine(n.id)}: ${oneLine(n.reason)}`] : []));
  return reasons.length > 0 ? [...table, "", ...reasons] : table;
}

const gib = (mib: number) => (mib / 1024).toFixed(1);
