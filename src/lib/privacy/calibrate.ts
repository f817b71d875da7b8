/**
 * The smallest noise multiplier whose accounting stays within a target epsilon: bisection on
 * z (epsilon falls as z grows), for `fedtensor plan --target-epsilon` and the accuracy table of
 * docs/algorithms.md. The answer is the upper end of the final bracket, so it always meets the
 * target; it is then rounded up to four significant digits, which only adds noise.
 */
import { ftError } from "../../errors/error.js";

export function smallestNoiseFor(targetEpsilon: number, epsilonAt: (noiseMultiplier: number) => number, range: readonly [number, number] = [0.05, 200]): number {
  if (!(targetEpsilon > 0 && Number.isFinite(targetEpsilon))) throw ftError("FT361", { target: String(targetEpsilon), why: "a target epsilon is a finite number > 0" });
  let [lo, hi] = range;
  if (!(epsilonAt(hi) <= targetEpsilon)) throw ftError("FT361", { target: String(targetEpsilon), why: `even a noise multiplier of ${hi} spends more` });
  if (epsilonAt(lo) <= targetEpsilon) return lo;
  while (hi / lo > 1 + 1e-4) {
    const mid = Math.sqrt(lo * hi);
    if (epsilonAt(mid) > targetEpsilon) lo = mid;
    else hi = mid;
  }
  const digits = 10 ** (Math.floor(Math.log10(hi)) - 3);
  return Math.ceil(hi / digits) * digits;
}
