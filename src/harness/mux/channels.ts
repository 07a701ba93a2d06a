/**
 * Channel names of a cluster sandbox's stream. Apart from control.ts, which holds the control
 * requests' schemas (the full zod build), so a harness in stdio mode does not load them.
 */
export const CHANNELS = { harness: "harness", model: "model", request: "request" } as const;
