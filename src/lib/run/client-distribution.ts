/**
 * The distribution of a metric across clients, as federated evaluation reports it: the mean
 * over clients (each client counts once: "unweighted"), the example-weighted mean (every
 * example counts once, which is the pooled value TFF's and FedJAX's federated evaluation
 * report), and the 10th, 50th and 90th percentiles over clients. Percentiles interpolate
 * linearly between order statistics, as numpy.percentile's default does (Hyndman and Fan's
 * type 7): p of n sorted values is at position p/100 * (n - 1).
 */

/**
 * The p-th percentile (0 <= p <= 100) of `values`, linear between order statistics; NaN for none.
 *
 * @example
 * import { percentile } from "fedtensor/lib";
 * console.log(percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 90)); // 2.5 3.7, as numpy.percentile
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside [0, 100]`);
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  const position = (p / 100) * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (position - below) * (sorted[above]! - sorted[below]!);
}

/**
 * A metric's distribution over clients: the mean with each client counting once, the
 * example-weighted mean, and the 10th, 50th and 90th percentiles.
 *
 * @example
 * const spread: Distribution = distribution([0.9, 0.8, 0.95], [100, 50, 200]);
 * console.log(spread.p10, spread.p50, spread.p90);
 */
export interface Distribution {
  /** Mean over clients, each client counting once. */
  readonly mean: number;
  /** Mean weighted by each client's examples: the value over all their examples pooled. */
  readonly weighted: number;
  readonly p10: number;
  readonly p50: number;
  readonly p90: number;
}

/**
 * The distribution of per-client `values` whose clients hold `examples` each; clients with no example are left out.
 *
 * @example
 * import { distribution } from "fedtensor/lib";
 * const accuracy = distribution([0.9, 0.6, 0.8, 0], [100, 20, 50, 0]); // the last client has no example: left out
 * console.log(accuracy.clients, accuracy.mean.toFixed(3), accuracy.weighted.toFixed(3)); // 3 0.767 0.835
 */
export function distribution(values: ArrayLike<number>, examples: ArrayLike<number>): Distribution & { readonly clients: number } {
  const kept: number[] = [];
  let weightedSum = 0;
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const n = examples[i]!;
    if (n <= 0) continue;
    kept.push(values[i]!);
    weightedSum += values[i]! * n;
    total += n;
  }
  const mean = kept.reduce((sum, v) => sum + v, 0) / kept.length;
  return { clients: kept.length, mean, weighted: weightedSum / total, p10: percentile(kept, 10), p50: percentile(kept, 50), p90: percentile(kept, 90) };
}

/** A distribution's statistics, in the order of its metrics columns. */
export const distributionStats = ["mean", "weighted", "p10", "p50", "p90"] as const satisfies readonly (keyof Distribution)[];

/** A distribution as metrics columns named `<prefix>_mean`, `<prefix>_weighted`, `<prefix>_p10`, ... */
export function distributionColumns(prefix: string, d: Distribution): Record<string, number> {
  return Object.fromEntries(distributionStats.map((s) => [`${prefix}_${s}`, d[s]]));
}
