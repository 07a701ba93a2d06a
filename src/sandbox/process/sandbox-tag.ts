/**
 * Every process of a sandbox carries `SWARMD_SANDBOX=<sandboxId>` in its environment. Children
 * inherit it through setsid, double forks and reparenting, which a process tree or a session
 * id does not survive, so /proc can still tell which processes are the sandbox's.
 */
export const SANDBOX_TAG_VAR = "SWARMD_SANDBOX";

export function sandboxTag(sandboxId: string): string {
  return `${SANDBOX_TAG_VAR}=${sandboxId}`;
}
