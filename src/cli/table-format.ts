/** Cells and columns shared by the CLI's tables (`swarm approvals`, `swarm runs`, `swarm machine`). */

/** `42s`, `5m`, `3h`, `2d`: how long ago, at a glance. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3_600) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3_600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** Text from the service or an agent, safe for one table cell: no line breaks or terminal controls. */
export function oneLine(text: string): string {
  // \p{Cc}: U+0000 to U+001F and U+007F to U+009F, the C0 and C1 controls.
  return text.replace(/[\s\p{Cc}]+/gu, " ").trim();
}

export function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** Cells padded to their column's widest, two spaces apart; the last column unpadded. */
export function columns(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}
