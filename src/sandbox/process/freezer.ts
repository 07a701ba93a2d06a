import type { FreezerKind } from "./sandbox-record.ts";

/**
 * One sandbox's processes as a unit: how the harness joins them, who they are, and how they are
 * frozen, thawed and killed. A cgroup (v2 `cgroup.freeze`, v1 `freezer.state`) when the machine
 * has a writable one; SIGSTOP/SIGCONT of every process found in /proc otherwise.
 */
export interface Freezer {
  readonly kind: FreezerKind;
  /**
   * Create what membership needs; returns the `cgroup.procs` files the harness's launch joins
   * before it execs (every process it ever spawns is then a member), none when membership is
   * by the sandbox's tag.
   */
  prepareLaunch(): Promise<string[]>;
  /** Pids of the sandbox's live processes (zombies excluded). */
  members(): Promise<number[]>;
  /** True when frozen (or freezing). False when there is nothing to freeze. */
  isFrozen(): Promise<boolean>;
  /** Suspend every member; resolves once the kernel reports all of them suspended. */
  freeze(signal: AbortSignal): Promise<void>;
  /** Continue every member; resolves once none is suspended any more. */
  thaw(signal: AbortSignal): Promise<void>;
  /** SIGKILL every member (frozen ones too) and resolve when none is alive. */
  killAll(signal: AbortSignal): Promise<void>;
  /** Remove what `prepareLaunch` created. Call after `killAll`. */
  release(): Promise<void>;
}

/** How long the kernel gets to settle a freeze, a thaw or a kill before the call fails. */
export const FREEZER_DEADLINE_MS = 10_000;
