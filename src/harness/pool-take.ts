import { chmodSync, chownSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as z from "zod/mini";
import type { AgentUser } from "./agent-user.ts";
import { CONTROL_FILES } from "./protocol.ts";

const id = z.int().check(z.positive());
const UserSchema = z.object({ uid: id, gid: id });

/**
 * What the daemon hands a pooled harness when an agent takes its sandbox (`take.json`, written
 * into the control folder before the daemon first connects): the users of the agent's run, and the
 * spec's env for the agent's tools. Absent users: the harness and tools run as the daemon's user.
 */
export const PoolTakeSchema = z.object({
  harness: z.optional(UserSchema),
  agent: z.optional(UserSchema),
  env: z.record(z.string(), z.string()),
});

export type PoolTake = z.infer<typeof PoolTakeSchema>;

/**
 * Take on what `take.json` says, once, before the agent is made: the harness becomes its run's
 * harness user (it holds CAP_SETUID/SETGID for its tools; a change between two unprivileged users
 * keeps them), and the spec's env joins the environment every tool inherits. Throws when the file
 * is missing or malformed: a pooled harness that no agent took makes no agent.
 */
export function applyPoolTake(controlDir: string): { agentUser?: AgentUser } {
  const path = join(controlDir, CONTROL_FILES.take);
  const take = PoolTakeSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  Object.assign(process.env, take.env);
  if (take.harness) {
    if (!process.setgid || !process.setuid) throw new Error("this platform cannot change a process's user");
    process.setgid(take.harness.gid);
    process.setuid(take.harness.uid);
  }
  // Read once: the control folder is now this user's, and a fork point copied from it need not carry the file.
  rmSync(path, { force: true });
  // Then the folder is as a cold sandbox's: this user's alone. Its group was the pool user's, whose
  // id is a hash slot another run's users could one day share.
  if (take.harness) {
    chownSync(controlDir, take.harness.uid, take.harness.gid);
    chmodSync(controlDir, 0o700);
  }
  return take.agent ? { agentUser: take.agent } : {};
}
