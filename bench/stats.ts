/** Small numeric helpers and markdown rendering shared by the benchmarks. */

/** The q-quantile (0..1) by nearest rank; NaN for no samples. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export const median = (samples: readonly number[]) => quantile(samples, 0.5);
export const p90 = (samples: readonly number[]) => quantile(samples, 0.9);

/** Milliseconds since `start` (a `performance.now()` reading). */
export const since = (start: number) => performance.now() - start;

/** Time one async call in milliseconds, handing back its value too. */
export async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: since(start), value };
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "—";
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** A ratio `ours / baseline`, as `0.42×`. */
export function fmtRatio(ours: number, baseline: number): string {
  if (!Number.isFinite(ours) || !Number.isFinite(baseline) || baseline === 0) return "—";
  const r = ours / baseline;
  return `${r < 0.1 ? r.toFixed(3) : r.toFixed(2)}×`;
}

export function fmtRate(perSecond: number, unit = "ev/s"): string {
  if (!Number.isFinite(perSecond)) return "—";
  return `${Math.round(perSecond).toLocaleString("en-US")} ${unit}`;
}

export function fmtMiB(bytes: number): string {
  if (!Number.isFinite(bytes)) return "—";
  if (Math.abs(bytes) < 1024 ** 2) return `${(bytes / 1024).toFixed(0)} KiB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** A markdown table: a header row, then one row per entry. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** A numeric knob from the environment (`BENCH_*`), or its default. */
export const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
