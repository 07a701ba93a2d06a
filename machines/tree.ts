/** Parent pointers of a run's agents: agentId → parentAgentId (null for the root). */
export type ParentMap = Readonly<Record<string, string | null>>;

/** Children of each agent, in spawn order (the order of the map). */
function childrenOf(parents: ParentMap): Map<string, string[]> {
  const children = new Map<string, string[]>();
  for (const [agentId, parent] of Object.entries(parents)) {
    if (parent === null) continue;
    const list = children.get(parent) ?? [];
    list.push(agentId);
    children.set(parent, list);
  }
  return children;
}

/** The agent and everything under it, parents before their children (pause order). */
export function parentsFirst(rootId: string, parents: ParentMap): string[] {
  const children = childrenOf(parents);
  const order: string[] = [];
  const visit = (id: string) => {
    order.push(id);
    for (const child of children.get(id) ?? []) visit(child);
  };
  visit(rootId);
  return order;
}

/**
 * The agent and everything under it by depth: the agent, then its children, then theirs, each
 * depth in spawn order. A cascade sends to one depth at a time: in this order for a pause (parents
 * before their children), reversed for a stop or resume (children before their parents).
 */
export function byDepth(rootId: string, parents: ParentMap): string[][] {
  const children = childrenOf(parents);
  const levels: string[][] = [];
  for (let level = [rootId]; level.length > 0; level = level.flatMap((id) => children.get(id) ?? []))
    levels.push(level);
  return levels;
}

/** The agent's ancestors, nearest first. */
export function ancestorsOf(agentId: string, parents: ParentMap): string[] {
  const chain: string[] = [];
  let current = parents[agentId] ?? null;
  while (current !== null && !chain.includes(current)) {
    chain.push(current);
    current = parents[current] ?? null;
  }
  return chain;
}
