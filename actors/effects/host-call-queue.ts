import PQueue from "p-queue";

/** Host calls of one agent answered at once. */
export const HOST_CALLS_ANSWERED = 8;
/** Host calls of one agent that wait, in the order they came, while `HOST_CALLS_ANSWERED` are answered. */
export const HOST_CALLS_WAITING = 64;
/**
 * The most the waiting calls of one agent may weigh together (their lines as the harness sent them):
 * 64 calls of the longest line a harness may send would hold 256 MiB of the daemon's memory.
 */
export const HOST_CALLS_WAITING_BYTES = 16 * 1024 * 1024;

/**
 * One agent's host calls: `HOST_CALLS_ANSWERED` answered at once, up to `HOST_CALLS_WAITING` more
 * waiting in order (FIFO) and weighing at most `HOST_CALLS_WAITING_BYTES`; past that a call is
 * not taken, and the caller refuses it at once. Nothing a harness sends grows it further.
 */
export interface HostCallQueue {
  /** Answer the call now or when its turn comes (`answer` must not reject); false when it would wait and the queue is full. */
  offer(bytes: number, answer: () => Promise<void>): boolean;
  /** The agent pauses: waiting calls start no more (calls being answered go on). Idempotent. */
  hold(): void;
  /** The agent runs again: waiting calls start, in order. Idempotent. */
  release(): void;
  /** Forget every waiting call, never to be answered: the connection they came on closed, and the harness sends them again on its next one. */
  drop(): void;
  /** Calls being answered and calls waiting. */
  readonly counts: { answering: number; waiting: number };
}

export function createHostCallQueue(): HostCallQueue {
  const queue = new PQueue({ concurrency: HOST_CALLS_ANSWERED });
  let waitingBytes = 0;
  return {
    offer(bytes, answer) {
      const waits = queue.isPaused || queue.size > 0 || queue.pending >= HOST_CALLS_ANSWERED;
      if (waits && (queue.size >= HOST_CALLS_WAITING || waitingBytes + bytes > HOST_CALLS_WAITING_BYTES)) return false;
      waitingBytes += bytes;
      // p-queue starts a task synchronously when a slot is free, so a call that does not wait is
      // never counted as waiting; one that `drop` forgets never starts, and `drop` zeroes the weight.
      void queue.add(() => {
        waitingBytes -= bytes;
        return answer();
      });
      return true;
    },
    hold() {
      queue.pause();
    },
    release() {
      queue.start();
    },
    drop() {
      queue.clear();
      waitingBytes = 0;
    },
    get counts() {
      return { answering: queue.pending, waiting: queue.size };
    },
  };
}
