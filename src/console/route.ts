import { useEffect, useState } from "preact/hooks";

/** Where the console is: the run list, a run, or a run with one agent open. Kept in the URL's hash, so the daemon serves one page. */
export type Route = { page: "runs" } | { page: "run"; runId: string; agentId: string | null };

export function parseRoute(hash: string): Route {
  const [, runs, runId, agentId] = hash.replace(/^#/, "").split("/");
  if (runs === "runs" && runId) return { page: "run", runId, agentId: agentId || null };
  return { page: "runs" };
}

export const runHref = (runId: string, agentId?: string): string => `#/runs/${runId}${agentId ? `/${agentId}` : ""}`;

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
