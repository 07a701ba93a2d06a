/** The `reply` action with fixed parameters: answer the control being handled with `outcome` (and `error`). */
export const reply = (outcome: "applied" | "noop" | "failed", error?: string) =>
  ({
    type: "reply",
    params: ({ event }: { event: { requestId: string } }) => ({
      requestId: event.requestId,
      outcome,
      ...(error ? { error } : {}),
    }),
  }) as const;
