import type Docker from "dockerode";
import { SwarmError } from "../../errors.ts";
import { engineStatus } from "../docker/engine.ts";

/** A sandbox's one task as the swarm reports it. */
export interface SandboxTask {
  serviceId: string;
  taskId: string;
  /** Where the swarm placed it; absent while it is not yet assigned. */
  nodeId?: string;
  /** `new`, `pending`, `assigned`, … `running`, `complete`, `failed`, `shutdown`, `rejected`, `orphaned`. */
  state: string;
  /** The swarm's reason, when it gave one (`no suitable node`, an engine error). */
  error?: string;
  message?: string;
  containerId?: string;
}

/** Task states from which a task never runs again. */
export const ENDED_STATES = new Set(["complete", "failed", "shutdown", "rejected", "orphaned", "remove"]);

/** The service's newest task, or undefined when the service or its task does not exist (yet). */
export async function currentTask(manager: Docker, serviceName: string): Promise<SandboxTask | undefined> {
  let tasks: SwarmTask[];
  try {
    tasks = (await manager.listTasks({ filters: { service: [serviceName] } })) as SwarmTask[];
  } catch (err) {
    if (engineStatus(err) === 404) return undefined;
    throw err;
  }
  const newest = tasks.sort((a, b) => String(b.CreatedAt).localeCompare(String(a.CreatedAt)))[0];
  return newest && toSandboxTask(newest);
}

/** A task as the engine's API answers it (dockerode's type names fewer fields). */
interface SwarmTask {
  ID?: string;
  ServiceID?: string;
  NodeID?: string;
  CreatedAt?: string;
  Status?: { State?: string; Err?: string; Message?: string; ContainerStatus?: { ContainerID?: string } };
}

export function toSandboxTask(task: SwarmTask): SandboxTask {
  const status = task.Status ?? {};
  return {
    serviceId: String(task.ServiceID),
    taskId: String(task.ID),
    nodeId: task.NodeID || undefined,
    state: status.State ?? "new",
    error: status.Err || undefined,
    message: status.Message || undefined,
    containerId: status.ContainerStatus?.ContainerID || undefined,
  };
}

/**
 * Poll until the task runs. `placedWithinMs`: give up (answer `undefined`) when the swarm has not
 * assigned it to a node by then, so the caller can place it elsewhere. A task that ends first, or
 * one not running by `timeoutMs`, is `SANDBOX_PROVISION_FAILED` with the swarm's reason.
 */
export async function waitRunning(
  manager: Docker,
  serviceName: string,
  options: { timeoutMs: number; placedWithinMs?: number; signal: AbortSignal },
): Promise<SandboxTask | undefined> {
  const started = Date.now();
  let last: SandboxTask | undefined;
  for (let pause = 25; ; pause = Math.min(pause * 2, 250)) {
    options.signal.throwIfAborted();
    last = await currentTask(manager, serviceName);
    if (last?.state === "running" && last.containerId) return last;
    if (last && ENDED_STATES.has(last.state))
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `The swarm could not start sandbox ${serviceName}: task ${last.state}${last.error ? `: ${last.error}` : ""}.`,
      );
    const waited = Date.now() - started;
    if (options.placedWithinMs !== undefined && !last?.nodeId && waited > options.placedWithinMs) return undefined;
    if (waited > options.timeoutMs)
      throw new SwarmError(
        "SANDBOX_PROVISION_FAILED",
        `The swarm did not start sandbox ${serviceName} within ${Math.round(options.timeoutMs / 1000)} s: task ${last?.state ?? "not created"}${last?.error ? ` (${last.error})` : ""}.`,
      );
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
