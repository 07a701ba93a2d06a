import { EndpointError } from "./client-errors.ts";

/** Where swarmd listens and how to authenticate, as the bridge and the CLI read it. */
export interface Endpoint {
  /** Base address without a trailing slash, e.g. `http://127.0.0.1:4600`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  /** Where `url` came from, named in "unreachable" messages (`SWARM_URL`, `--url`, a default). */
  source: string;
}

export const DEFAULT_SWARM_URL = "http://127.0.0.1:4600";

/**
 * `SWARM_URL` (default `http://127.0.0.1:4600`) and `SWARM_TOKEN` (docs/design.md "Names"); an explicit
 * `url` (the CLI's `--url`) wins. Throws `EndpointError` naming the variable when the address is not
 * an http(s) URL, so a typo is reported as such rather than as an unreachable service.
 */
export function endpointFromEnv(env: NodeJS.ProcessEnv = process.env, url?: string): Endpoint {
  const [raw, source] =
    url !== undefined
      ? [url, "--url"]
      : env.SWARM_URL
        ? [env.SWARM_URL, "SWARM_URL"]
        : [DEFAULT_SWARM_URL, "SWARM_URL unset: the default"];
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new EndpointError(
      `${source.split(" ")[0]} is not a URL: ${JSON.stringify(raw)} (expected e.g. ${DEFAULT_SWARM_URL})`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new EndpointError(`${source.split(" ")[0]} must be an http:// or https:// URL, not ${JSON.stringify(raw)}`);
  }
  const token = env.SWARM_TOKEN ? env.SWARM_TOKEN : undefined;
  return { url: raw.replace(/\/+$/, ""), token, source };
}
