/**
 * Distributed DP priced by the PLD accountant (docs/algorithms.md "Privacy accounting"): the
 * d-dimensional sum of n clients' discrete Gaussians, bounded by a continuous Gaussian
 * mechanism whose PLD the accountant composes exactly, plus two small corrections that are
 * charged to the whole run.
 *
 * The chain of bounds, per coordinate of a round's released sum (integer units):
 * 1. The sampler's draws: within ratio 1 +- eta of N_Z(0, sigma^2) after moving at most its
 *    total variation t (discrete-gaussian.ts), so the sum of n draws is within ratio
 *    (1 +- eta)^n of the sum of n exact ones, after a total variation of n t.
 * 2. The sum of n exact N_Z(0, sigma^2) is within ratio 1 + tau of N_Z(0, n sigma^2)
 *    (Kairouz, Liu and Steinke 2021, Theorem 1; the tau of the RDP path).
 * 3. N_Z(0, s^2 + r^2) is within ratio (1 + e_r) / (1 - e_r) of K(N(0, s^2)), where K rounds a
 *    real x to the integer k with probability exp(-(x-k)^2 / 2r^2) / Theta_r(x): K commutes with
 *    integer shifts, so K(v + G) = v + K(G), and by Poisson summation Theta_r(x) is
 *    r sqrt(2 pi) (1 +- e_r), e_r = 2 sum_m exp(-2 pi^2 r^2 m^2). With r = 2, e_r < 1e-34.
 * So a round is, up to ratio e^a with a = d (n log(1/(1-eta)) + log(1+tau) + log((1+e_r)/(1-e_r)))
 * and total variation T = n d t, a post-processing of the Gaussian mechanism with noise s =
 * sqrt(minClients sigma^2 - r^2) and L2 sensitivity B (the rounded vector's bound): noise
 * multiplier s / B. Fewer survivors than minClients abort the round; more add noise. One
 * client's rounded vector v, random through its rounding, is a mixture of shifts |v| <= B, and
 * hockey-stick divergences are jointly convex, so the worst shift bounds it.
 *
 * Over k rounds (adaptive composition multiplies the ratios along the transcript):
 *   delta(eps) <= e^(k a) delta_G(eps - 2 k a) + (1 + e^eps) k T,
 * with delta_G the k-fold Gaussian mechanism's curve. Its PLD needs no grid: k Gaussian PLDs
 * compose to the Gaussian PLD of mu = sqrt(k) B / s, whose curve is exact in closed form
 * (Balle and Wang 2018, Theorem 8), so this is the PLD accountant's answer without its
 * discretisation (PldAccountant.step(1, s / B, k) agrees within its grid, from above), and
 * calibration's bisection stays cheap. No amplification by sampling is claimed: the server of
 * distributed DP sees who took part (as the RDP path).
 */
import { DISCRETE_GAUSSIAN_SAMPLER_ERROR } from "../../ir/discrete-gaussian.js";
import { sumOfDiscreteGaussiansTau, type DistributedDpCalibration } from "../../ir/distributed-dp-calibration.js";
import { ftError } from "../../errors/error.js";
import { logNormalSf, normalSf } from "./pld/normal-tail.js";

/** r, the standard deviation of the rounding kernel K of step 3 (integer units). */
export const ROUNDING_KERNEL_STDDEV = 2;

/**
 * What one round of distributed DP is bounded by: a Gaussian mechanism, a ratio and a total variation.
 *
 * @example
 * const { noiseMultiplier } = distributedDpPldBound(cal)!; // a DistributedDpPldBound
 */
export interface DistributedDpPldBound {
  /** s / B: the Gaussian mechanism (sensitivity 1) a round post-processes. */
  readonly noiseMultiplier: number;
  /** a: the log-ratio by which a round's laws may differ from that post-processing. */
  readonly logRatio: number;
  /** T: the total variation moved before the ratio applies. */
  readonly totalVariation: number;
}

/** e_r of step 3: the relative deviation of Theta_r from r sqrt(2 pi). */
function kernelDeviation(r: number): number {
  let sum = 0;
  for (let m = 1; m <= 4; m++) sum += Math.exp(-2 * Math.PI * Math.PI * r * r * m * m);
  return 2 * sum;
}

/**
 * A round's bound, or undefined when the summed noise is too small for the rounding kernel (minClients sigma^2 <= r^2).
 *
 * @example
 * const bound = distributedDpPldBound(calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 10, maxClients: 20, dimension: 8192 }));
 */
export function distributedDpPldBound(cal: DistributedDpCalibration, sampler: { readonly relativeError: number; readonly totalVariation: number } = DISCRETE_GAUSSIAN_SAMPLER_ERROR): DistributedDpPldBound | undefined {
  const r = ROUNDING_KERNEL_STDDEV;
  const variance = cal.minClients * cal.localSigma ** 2 - r * r;
  if (!(variance > 0)) return undefined;
  // The sampler's ratio once its total variation is moved: renormalising costs at most twice that mass.
  const eta = sampler.relativeError + 4 * sampler.totalVariation;
  const e = kernelDeviation(r);
  const perCoordinate = -cal.maxClients * Math.log1p(-eta) + Math.log1p(sumOfDiscreteGaussiansTau(cal.localSigma, cal.maxClients)) + Math.log1p(e) - Math.log1p(-e);
  return {
    noiseMultiplier: Math.sqrt(variance) / cal.l2Bound,
    logRatio: cal.dimension * perCoordinate,
    totalVariation: cal.maxClients * cal.dimension * sampler.totalVariation,
  };
}

/** The Gaussian mechanism's exact delta(eps) for mu = sensitivity / noise (Balle and Wang 2018, Theorem 8). */
const gaussianDelta = (mu: number, eps: number): number => normalSf(eps / mu - mu / 2) - Math.exp(eps + logNormalSf(eps / mu + mu / 2));

/** Its smallest epsilon >= 0 with delta(eps) <= delta (bisection, the upper end kept, so never below). */
function gaussianEpsilon(mu: number, delta: number): number {
  if (gaussianDelta(mu, 0) <= delta) return 0;
  let [lo, hi] = [0, 1];
  while (gaussianDelta(mu, hi) > delta) [lo, hi] = [hi, 2 * hi];
  for (let i = 0; i < 100 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (gaussianDelta(mu, mid) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * A run's releases of one calibration: `count` of them (a run's rounds, or its evaluations' histograms).
 *
 * @example
 * const rounds: DistributedDpReleases = { calibration: calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 10, maxClients: 20, dimension: 8192 }), count: 10 };
 */
export interface DistributedDpReleases {
  readonly calibration: DistributedDpCalibration;
  readonly count: number;
}

/** FT305 unless every release's count is a whole number (a count of rounds or of histograms). */
export function checkReleaseCounts(releases: readonly DistributedDpReleases[]): void {
  for (const { count } of releases) if (!(Number.isInteger(count) && count >= 0)) throw ftError("FT305", { option: "rounds", why: `${count} given; a count of rounds is an integer >= 0` });
}

/**
 * Epsilon at `delta` after `rounds` rounds by the PLD accountant (the bound above solved for
 * eps by a fixed point, as dp-fedavg-epsilon.ts does for the sampler's share); Infinity where
 * the corrections alone spend delta or the noise is below the kernel's.
 *
 * @example
 * const epsilon = distributedDpPldEpsilon(calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 10, maxClients: 20, dimension: 8192 }), 10, 1e-5);
 */
export function distributedDpPldEpsilon(cal: DistributedDpCalibration, rounds: number, delta: number, sampler = DISCRETE_GAUSSIAN_SAMPLER_ERROR): number {
  return distributedDpComposedPldEpsilon([{ calibration: cal, count: rounds }], delta, sampler);
}

/**
 * Epsilon at `delta` of releases of different calibrations in one run (a distributed-dp run's
 * rounds with its evaluations' histograms, src/lib/run/distributed-dp-run.ts), by the same
 * argument as k rounds of one: release i is, up to ratio e^(a_i) after moving total variation
 * T_i, a post-processing of the Gaussian mechanism of multiplier z_i = s_i / B_i. Along the
 * transcript the ratios multiply and the moved masses add, whichever release each step is, so
 *   delta(eps) <= e^A delta_G(eps - 2 A) + (1 + e^eps) sum_i count_i T_i,  A = sum_i count_i a_i,
 * and the Gaussian mechanisms compose exactly to the Gaussian of mu = sqrt(sum_i count_i / z_i^2)
 * (their joint law is a Gaussian shifted by a vector of norm mu, a one-dimensional one after a
 * rotation: Dong, Roth and Su 2019, Corollary 3.3), whose curve delta_G is closed-form.
 *
 * @example
 * const rounds = calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 10, maxClients: 20, dimension: 8192 });
 * const histograms = calibrateDistributedDp({ clip: 1, noiseMultiplier: 5, bits: 16, minClients: 10, maxClients: 100, dimension: 16 });
 * const epsilon = distributedDpComposedPldEpsilon([{ calibration: rounds, count: 10 }, { calibration: histograms, count: 2 }], 1e-5);
 */
export function distributedDpComposedPldEpsilon(releases: readonly DistributedDpReleases[], delta: number, sampler = DISCRETE_GAUSSIAN_SAMPLER_ERROR): number {
  checkReleaseCounts(releases);
  if (!(delta > 0 && delta < 1)) throw ftError("FT305", { option: "delta", why: `${delta} given; delta is in (0, 1)` });
  const made = releases.filter((r) => r.count > 0).map((r) => ({ count: r.count, bound: distributedDpPldBound(r.calibration, sampler) }));
  if (made.length === 0) return 0;
  if (made.some((r) => r.bound === undefined)) return Infinity;
  const total = (part: (bound: DistributedDpPldBound) => number) => made.reduce((sum, r) => sum + r.count * part(r.bound!), 0);
  const mu = Math.sqrt(total((b) => 1 / b.noiseMultiplier ** 2));
  const ratio = total((b) => b.logRatio);
  const moved = total((b) => b.totalVariation);
  const share = (epsilon: number) => (1 + Math.exp(epsilon)) * moved;
  const at = (assumed: number): number => {
    const left = (delta - share(assumed)) * Math.exp(-ratio);
    return left > 0 ? gaussianEpsilon(mu, left) + 2 * ratio : Infinity;
  };
  // The share assumed grows with each pass; the first epsilon within the share assumed is valid.
  let assumed = at(0);
  for (let pass = 0; pass < 50 && Number.isFinite(assumed); pass++) {
    const epsilon = at(assumed);
    if (epsilon <= assumed) return epsilon;
    assumed = epsilon;
  }
  return Infinity;
}
