import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SWARMD_ROOT } from "../../src/harness/launch.ts";
import type { Json } from "../support/daemon.ts";

export interface ToolAnswer {
  isError: boolean;
  text: string;
  data: Json;
}

export interface Bridge {
  client: Client;
  /** Calls a tool and flattens the answer to its error flag, text and structured content. */
  tool(name: string, args?: Record<string, unknown>, options?: { onprogress?: (p: Json) => void }): Promise<ToolAnswer>;
  stderr(): string;
  close(): Promise<void>;
}

/**
 * The bridge as a chat client starts it: a child process on stdio, driven by the SDK's own
 * `Client` over `StdioClientTransport`. `viaBin` starts it as docs/cli.md's configuration does, the
 * bin itself as the command (`bin/swarm.js mcp`), from another folder, instead of its module.
 */
export async function startBridge(env: Record<string, string>, options: { viaBin?: boolean } = {}): Promise<Bridge> {
  const transport = new StdioClientTransport({
    ...(options.viaBin
      ? { command: join(SWARMD_ROOT, "bin/swarm.js"), args: ["mcp"], cwd: tmpdir() }
      : {
          command: process.execPath,
          args: ["--import", "tsx", join(SWARMD_ROOT, "src/bridge/main.ts")],
          cwd: SWARMD_ROOT,
        }),
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "swarmd-bridge-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    async tool(name, args = {}, callOptions = {}) {
      const answer: Json = await client.callTool({ name, arguments: args }, undefined, {
        timeout: 120_000,
        onprogress: callOptions.onprogress,
      });
      const text = (answer.content as Json[]).map((c) => (c.type === "text" ? c.text : "")).join("");
      return { isError: answer.isError === true, text, data: answer.structuredContent };
    },
    stderr: () => stderr,
    close: () => client.close(),
  };
}
