/**
 * "Did you mean …?": the known names nearest to a mistyped one, by edit distance. Shared by the
 * daemon (an unknown model's 400) and the CLI (an unknown command or flag); no dependency.
 */

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions from `a` to `b`. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * Up to `count` of `known` nearest to `wanted` (case-insensitive), nearest first, ties in `known`'s
 * order; `keyOf` says what of each is compared (the item itself by default). One counts as near when
 * it is within a third of the longer name's length (at least one edit), or when one contains the other
 * (`sonnet` → `claude-sonnet-4-5`); farther ones are no help and are left out.
 */
export function closest<T = string>(
  wanted: string,
  known: Iterable<T>,
  count = 3,
  keyOf: (item: T) => string = String,
): T[] {
  const target = wanted.toLowerCase();
  const scored: { item: T; distance: number; index: number }[] = [];
  let index = 0;
  for (const item of known) {
    const candidate = keyOf(item).toLowerCase();
    const distance = editDistance(target, candidate);
    const contains =
      Math.min(target.length, candidate.length) >= 3 && (candidate.includes(target) || target.includes(candidate));
    if (distance <= Math.max(1, Math.ceil(Math.max(target.length, candidate.length) / 3)) || contains)
      scored.push({ item, distance, index });
    index++;
  }
  scored.sort((a, b) => a.distance - b.distance || a.index - b.index);
  return [...new Set(scored.map((s) => s.item))].slice(0, count);
}
