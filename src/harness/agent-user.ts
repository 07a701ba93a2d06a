import { spawn } from "node:child_process";
import {
  createBashToolDefinition,
  createEditToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
  type ToolDefinition,
} from "@mariozechner/pi-coding-agent";

/** The unprivileged user an agent's tools run as, apart from the harness's own user. */
export interface AgentUser {
  uid: number;
  gid: number;
}

const SETPRIV = "/usr/bin/setpriv";

/**
 * The words that run a program as the agent's user with no capabilities at all (none effective,
 * permitted, inheritable, ambient or in the bounding set) and no way to gain any (no_new_privs).
 * The harness keeps CAP_SETUID/SETGID/SETPCAP to do this (and CAP_KILL to stop what it started);
 * what it starts keeps none of them.
 */
export function asAgent(user: AgentUser): string[] {
  return [
    SETPRIV,
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--bounding-set=-all",
    "--nnp",
    "--",
  ];
}

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * pi's bash, read, write and edit tools, each acting as the agent's user: the shell the bash tool
 * starts `exec`s into the agent's user at once (pi's abort and timeout still reach its process
 * group), and the file tools read and write through `cat`, `mkdir` and `test` run as that user, so
 * a path the model names is opened with the agent's rights, never the harness's (its control
 * folder stays out of reach even through `../` or a link the agent planted).
 */
export function agentUserTools(cwd: string, user: AgentUser, names: readonly string[]): ToolDefinition[] {
  const prefix = asAgent(user);
  const run = (argv: string[], input?: string) => runAs(prefix, argv, cwd, input);
  const readFile = async (path: string) => (await run(["/bin/cat", "--", path])).stdout;
  const writeFile = async (path: string, content: string) => {
    await run(["/bin/sh", "-c", 'cat > "$1"', "sh", path], content);
  };
  const tools: Record<string, () => ToolDefinition> = {
    bash: () =>
      createBashToolDefinition(cwd, {
        spawnHook: (context) => ({
          ...context,
          command: `exec ${prefix.map(quote).join(" ")} /bin/bash -c ${quote(context.command)}`,
        }),
      }) as unknown as ToolDefinition,
    read: () =>
      createReadToolDefinition(cwd, {
        operations: { readFile, access: async (path) => void (await run(["/usr/bin/test", "-r", path])) },
      }) as unknown as ToolDefinition,
    write: () =>
      createWriteToolDefinition(cwd, {
        operations: { writeFile, mkdir: async (dir) => void (await run(["/bin/mkdir", "-p", "--", dir])) },
      }) as unknown as ToolDefinition,
    edit: () =>
      createEditToolDefinition(cwd, {
        operations: {
          readFile,
          writeFile,
          access: async (path) => void (await run(["/bin/sh", "-c", 'test -r "$1" && test -w "$1"', "sh", path])),
        },
      }) as unknown as ToolDefinition,
  };
  return names.flatMap((name) => (tools[name] ? [tools[name]()] : []));
}

/** Run `prefix + argv`, feeding `input`; rejects with the program's own error text when it fails. */
function runAs(prefix: string[], argv: string[], cwd: string, input?: string): Promise<{ stdout: Buffer }> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = [...prefix, ...argv];
    const child = spawn(file!, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString("utf8");
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve({ stdout: Buffer.concat(out) });
      else
        reject(
          new Error(
            err.trim().replace(/^\/bin\/(cat|sh|mkdir): (line \d+: )?/, "") || `${argv[0]} exited with ${code}`,
          ),
        );
    });
  });
}
