/**
 * What freezing means for a sandbox that is not a process: everything that moves its harness on
 * (socket traffic, events, tool calls and the steps inside them) waits at this gate while it is
 * shut, and goes on from where it stood once it opens. What is in flight between two such points
 * (a model answer being streamed) runs on, but nothing of it shows until the thaw.
 */
export interface FreezeGate {
  readonly frozen: boolean;
  freeze(): void;
  /** Open the gate: deferred work and waiters go on in the order they came. */
  thaw(): void;
  /** Resolves at once while open, else at the thaw. */
  passed(): Promise<void>;
  /** Run `work` now while open, else at the thaw (in call order). */
  defer(work: () => void): void;
}

export function createFreezeGate(): FreezeGate {
  let frozen = false;
  let deferred: Array<() => void> = [];

  const gate: FreezeGate = {
    get frozen() {
      return frozen;
    },
    freeze() {
      if (frozen) return;
      frozen = true;
    },
    thaw() {
      if (!frozen) return;
      frozen = false;
      const due = deferred;
      deferred = [];
      for (const work of due) work();
    },
    passed: () => new Promise((resolve) => gate.defer(resolve)),
    defer(work) {
      if (frozen) deferred.push(work);
      else work();
    },
  };
  return gate;
}
