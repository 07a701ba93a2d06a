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

/** The agent and everything under it, every child before its parent (stop and resume order). */
export function leavesFirst(rootId: string, parents: ParentMap): string[] {
  const children = childrenOf(parents);
  const order: string[] = [];
  const visit = (id: string) => {
    for (const child of children.get(id) ?? []) visit(child);
    order.push(id);
  };
  visit(rootId);
  return order;
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
