/**
 * The audit's lower bound on epsilon from a distinguisher's error rates (see audit.test.ts's
 * header), shared by the audits of dpSum, DP-FedAvg and distributed DP.
 */
import { clopperPearson } from "./clopper-pearson.js";

const delta = 1e-5;

/** The bound from one threshold: canary declared present when the statistic exceeds it. */
function boundAt(threshold: number, without: readonly number[], withCanary: readonly number[]): number {
  const falsePositives = without.filter((s) => s > threshold).length;
  const falseNegatives = withCanary.filter((s) => s <= threshold).length;
  const fpr = clopperPearson(falsePositives, without.length).upper;
  const fnr = clopperPearson(falseNegatives, withCanary.length).upper;
  // A side whose other error rate may reach 1 - delta shows nothing (its log would be NaN): 0, not NaN, for small samples.
  const side = (error: number, other: number) => (1 - delta - error > 0 ? Math.log((1 - delta - error) / other) : 0);
  return Math.max(0, side(fnr, fpr), side(fpr, fnr));
}

/** Epsilon's lower bound: the threshold picked on the first half of each set's trials, the bound computed on the second. */
export function auditLowerBound(without: readonly number[], withCanary: readonly number[]): number {
  const half = (xs: readonly number[]) => [xs.slice(0, xs.length >> 1), xs.slice(xs.length >> 1)] as const;
  const [pickWithout, countWithout] = half(without);
  const [pickWith, countWith] = half(withCanary);
  const candidates = [...new Set([...pickWithout, ...pickWith])].sort((a, b) => a - b);
  let best = { threshold: candidates[0]! - 1, bound: -Infinity };
  for (const threshold of candidates) {
    const bound = boundAt(threshold, pickWithout, pickWith);
    if (bound > best.bound) best = { threshold, bound };
  }
  return boundAt(best.threshold, countWithout, countWith);
}
