import type Docker from "dockerode";

/** How often a pause the freezer could not complete is tried again, and the wait before the first retry (doubled each time). */
const PAUSE_ATTEMPTS = 5;
const FIRST_RETRY_MS = 100;

/**
 * `docker pause`, tried again when the cgroup freezer gave up (`unable to freeze`): runc stops
 * waiting when a process of the container sits in the kernel (busy I/O on a loaded host), and a
 * moment later the same freeze goes through. Any other error, or the last attempt's, is thrown.
 */
export async function pauseContainer(container: Docker.Container, signal?: AbortSignal): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await container.pause(signal ? { abortSignal: signal } : {});
      return;
    } catch (err) {
      if (attempt >= PAUSE_ATTEMPTS || !/unable to freeze/i.test(String(err))) throw err;
      signal?.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, FIRST_RETRY_MS * 2 ** (attempt - 1)));
    }
  }
}

/** Run `work` with the container paused, leaving it as it was: one already paused (`paused`) stays so. */
export async function pausedFor<T>(container: Docker.Container, paused: boolean, work: () => Promise<T>): Promise<T> {
  if (paused) return work();
  await pauseContainer(container);
  try {
    return await work();
  } finally {
    await container.unpause();
  }
}
