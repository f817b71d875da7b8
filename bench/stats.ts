/** The round benches' statistics: the median and fastest of a variant's times, and how far two runs' outputs part. */

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** On a shared machine other work only ever adds time: the fastest round is the steadiest estimate. */
export const fastest = (xs: readonly number[]): number => Math.min(...xs);

/** The largest |a - b| over the arrays of `a` (by name) and the same-named arrays of `b`. */
export const maxDiff = (a: Record<string, Float32Array>, b: Record<string, Float32Array>): number =>
  Math.max(...Object.keys(a).map((k) => a[k]!.reduce((m, v, i) => Math.max(m, Math.abs(v - b[k]![i]!)), 0)));
