/** Deeper than any real agent spec (a spawn inside a spawn adds four levels), far below a stack overflow. */
export const MAX_JSON_DEPTH = 512;

/** True when `value` (parsed JSON) nests arrays or objects more than `max` levels deep. Iterative: any depth is safe. */
export function exceedsJsonDepth(value: unknown, max: number): boolean {
  const pending: Array<[node: unknown, depth: number]> = [[value, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== "object") continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return false;
}
