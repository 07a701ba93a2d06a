/** Read `read` every 50 ms until `match` holds, and return that value; past `timeoutMs`, fail saying `what` and the last value. */
export async function pollUntil<T>(
  read: () => Promise<T>,
  match: (value: T) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (match(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Check `check` every 50 ms until it holds; past `timeoutMs`, fail saying `what`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  await pollUntil(
    async () => await check(),
    (ok) => ok,
    what,
    timeoutMs,
  );
}
