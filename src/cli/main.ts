import { pathToFileURL } from "node:url";
import { endpointFromEnv } from "../client/endpoint.ts";
import { createSwarmClient } from "../client/swarm-client.ts";
import { closest } from "../closest.ts";
import type { PermissionDecision } from "../swarm-api.ts";
import type { CliContext, CliIo } from "./cli-context.ts";
import type { ControlVerb } from "./control-command.ts";
import { describeFailure, EXIT, type ExitCode } from "./exit-codes.ts";
import { COMMAND_USAGE, USAGE } from "./usage.ts";

type Command = (ctx: CliContext, args: string[]) => Promise<ExitCode>;

// Commands load on use: a CLI started once per command should not compile the bridge, the spec
// schema and every other command first (startup time is most of a short command's run time).
const control =
  (verb: ControlVerb): Command =>
  async (ctx, args) =>
    (await import("./control-command.ts")).controlCommand(ctx, verb, args);
const decide =
  (decision: PermissionDecision): Command =>
  async (ctx, args) =>
    (await import("./decision-command.ts")).decisionCommand(ctx, decision, args);
const COMMANDS: Record<string, () => Promise<Command>> = {
  run: async () => (await import("./run-command.ts")).runCommand,
  spawn: async () => (await import("./spawn-command.ts")).spawnCommand,
  fork: async () => (await import("./fork-command.ts")).forkCommand,
  changes: async () => (await import("./changes-command.ts")).changesCommand,
  adopt: async () => (await import("./adopt-command.ts")).adoptCommand,
  wait: async () => (await import("./wait-command.ts")).waitCommand,
  delete: async () => (await import("./delete-command.ts")).deleteCommand,
  models: async () => (await import("./models-command.ts")).modelsCommand,
  nodes: async () => (await import("./nodes-command.ts")).nodesCommand,
  prompt: async () => (await import("./prompt-command.ts")).promptCommand,
  runs: async () => (await import("./runs-command.ts")).runsCommand,
  tree: async () => (await import("./tree-command.ts")).treeCommand,
  machine: async () => (await import("./machine-command.ts")).machineCommand,
  events: async () => (await import("./events-command.ts")).eventsCommand,
  result: async () => (await import("./result-command.ts")).resultCommand,
  specs: async () => (await import("./specs-command.ts")).specsCommand,
  budget: async () => (await import("./budget-command.ts")).budgetCommand,
  approvals: async () => (await import("./approvals-command.ts")).approvalsCommand,
  allow: async () => decide("allow"),
  deny: async () => decide("deny"),
  pause: async () => control("pause"),
  resume: async () => control("resume"),
  stop: async () => control("stop"),
  steer: async () => control("steer"),
};

export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  io?: CliIo;
  signal?: AbortSignal;
}

/**
 * `swarm <command> ...`: runs one command and resolves with its exit code (see `EXIT`); every
 * failure is one line on stderr starting with `swarm:` (a usage error adds the usage). Never exits
 * the process itself.
 */
export async function runCli(argv: string[], options: CliOptions = {}): Promise<ExitCode> {
  const env = options.env ?? process.env;
  const io = options.io ?? processIo();
  const [command, ...args] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    (command === undefined ? io.err : io.out)(USAGE);
    return command === undefined ? EXIT.USAGE : EXIT.OK;
  }
  const load = COMMANDS[command];
  if (!load) {
    const near = closest(command, [...Object.keys(COMMANDS), "mcp"], 1);
    const hint = near.length > 0 ? `; did you mean swarm ${near[0]}?` : "";
    io.err(`swarm: unknown command ${JSON.stringify(command)}${hint}\n\n${USAGE}`);
    return EXIT.USAGE;
  }
  if (args.includes("--help") || args.includes("-h")) {
    io.out(`usage: ${COMMAND_USAGE[command] ?? USAGE}\n`);
    return EXIT.OK;
  }
  const ctx: CliContext = {
    io,
    async specs() {
      const { createSpecStore, specsDir } = await import("../client/spec-store.ts");
      return createSpecStore(specsDir(env));
    },
    signal: options.signal ?? new AbortController().signal,
    client: (url) => createSwarmClient(endpointFromEnv(env, url)),
  };
  try {
    return await (await load())(ctx, args);
  } catch (err) {
    if (ctx.signal.aborted) return EXIT.INTERRUPTED;
    const failure = describeFailure(err);
    io.err(`swarm: ${failure.message}\n`);
    return failure.code;
  }
}

function processIo(): CliIo {
  // `swarm events | head` closes the pipe early; that is the reader's choice, not an error.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(EXIT.OK);
  });
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    isTTY: process.stdout.isTTY === true,
  };
}

/** Resolves once everything written to `stream` before this call has been handed to the OS. */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
    else stream.write("", () => resolve());
  });
}

/** The `swarm` process: runs one command and exits with its code; never returns or throws. */
export async function main(argv: string[]): Promise<never> {
  try {
    if (argv[0] === "mcp" && (argv.includes("--help") || argv.includes("-h"))) {
      console.log(`usage: ${COMMAND_USAGE.mcp}`);
      process.exit(EXIT.OK);
    }
    if (argv[0] === "mcp") {
      // The bridge owns stdio from here on: nothing else may write to stdout.
      const url = argv.indexOf("--url");
      const env = url >= 0 && argv[url + 1] ? { ...process.env, SWARM_URL: argv[url + 1] } : process.env;
      const { runBridge } = await import("../bridge/main.ts");
      await runBridge(env);
      process.exit(EXIT.OK);
    }
    const controller = new AbortController();
    process.once("SIGINT", () => controller.abort());
    const code = await runCli(argv, { signal: controller.signal });
    // Exit explicitly: idle keep-alive sockets must not hold a finished command open. But first let
    // a pipe take what was written: writes to a pipe are asynchronous, and `exit` drops the rest.
    await Promise.all([drained(process.stdout), drained(process.stderr)]);
    process.exit(code);
  } catch (err) {
    const failure = describeFailure(err);
    console.error(`swarm: ${failure.message}`);
    process.exit(failure.code);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  void main(process.argv.slice(2));
