/**
 * Distributed DP with the distributed discrete Gaussian (Kairouz, Liu and Steinke 2021, "The
 * Distributed Discrete Gaussian Mechanism for Federated Learning with Secure Aggregation";
 * TFF's DistributedDpSumFactory): calibration and accounting, on the host.
 *
 * Each client clips its vector to L2 norm c, rotates it (randomized Hadamard, d = 2^m
 * coordinates), scales it by gamma, rounds it to integers with conditional randomized rounding
 * (norm at most B, else tries again, else sends zeros), adds N_Z(0, sigma^2) per coordinate and
 * wraps mod 2^bits. The server sums mod 2^bits and sees x_1 + ... + x_n + Y_1 + ... + Y_n.
 *
 * Calibration (their section 4, TFF's heuristic scale): the per-client noise, in model units,
 * is z c / sqrt(minClients), so that minClients survivors give the sum a noise of standard
 * deviation z c; gamma is the largest scale with which kStddevs standard deviations of the
 * scaled aggregate of maxClients clients (signal at most maxClients c spread evenly over d
 * coordinates by the rotation, noise, and rounding) fit in 2^bits:
 *   2^bits = 2 k sqrt((gamma maxClients c)^2 / d + maxClients (gamma^2 sigma_model^2 + 1/4)) .
 * B, the rounded vector's norm bound, is min(gamma c + sqrt(d), sqrt((gamma c)^2 + d/4 +
 * sqrt(2 ln(1/beta)) (gamma c + sqrt(d)/2))) (their Theorem 1 / Proposition 22); the L1 bound
 * is B min(sqrt(d), B) (integer vectors: |v|_1 <= |v|_2^2).
 *
 * Accounting: the sum of n >= minClients clients' noise, each N_Z(0, sigma^2)^d, makes the
 * released sum RDP at order alpha with (their Proposition 14 with Theorem 1's tau)
 *   eps(alpha) = min(alpha/2 s2^2 + tau d, alpha/2 (s2^2 + 2 s1 tau + tau^2 d), alpha/2 (s2 + sqrt(d) tau)^2)
 * where s2 = B / (sqrt(n) sigma), s1 = B1 / (sqrt(n) sigma), tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 sigma^2 k / (k+1)).
 * Worst case over n in [minClients, maxClients]: s at minClients, tau at maxClients. The
 * neighbouring relation is one participant's vector replaced by zeros (sensitivity B): the
 * server of distributed DP sees who took part, so a client's participation is not hidden and no
 * amplification by sampling is claimed (each round composes in full). RDP adds over rounds and
 * converts to (epsilon, delta) as rdp.ts does. The sampler's own error (discrete-gaussian.ts)
 * is added: a ratio within 1 +- eta per draw adds at most (2 alpha - 1) / (alpha - 1) eta per
 * draw to the RDP at alpha, and its total variation goes into delta with the factor (1 + e^eps).
 */
import { ftError } from "../../errors/error.js";
import { DISCRETE_GAUSSIAN_SAMPLER_ERROR } from "../../ir/discrete-gaussian.js";
import { calibrateDistributedDp, sumOfDiscreteGaussiansTau, type DistributedDpCalibration, type DistributedDpParameters } from "../../ir/distributed-dp-calibration.js";
import { checkReleaseCounts, distributedDpComposedPldEpsilon, type DistributedDpReleases } from "./distributed-dp-pld.js";
import { DEFAULT_RDP_ORDERS, rdpToEpsilon, type RdpConversion } from "./rdp.js";

/** RDP of one round at each order (Proposition 14 with Theorem 1, worst case over the survivors), the sampler's error not included. */
export function distributedDpRoundRdp(cal: DistributedDpCalibration, orders: readonly number[] = DEFAULT_RDP_ORDERS): number[] {
  const noise = Math.sqrt(cal.minClients) * cal.localSigma;
  const s2 = cal.l2Bound / noise;
  const s1 = cal.l1Bound / noise;
  const tau = sumOfDiscreteGaussiansTau(cal.localSigma, cal.maxClients);
  const d = cal.dimension;
  return orders.map((alpha) =>
    Math.min((alpha / 2) * s2 * s2 + tau * d, (alpha / 2) * (s2 * s2 + 2 * s1 * tau + tau * tau * d), (alpha / 2) * (s2 + Math.sqrt(d) * tau) ** 2),
  );
}

export interface SamplerError {
  /** The sampler's P^/P within 1 +- this per draw (DiscreteGaussianTable.relativeError). */
  readonly relativeError: number;
  /** Its total variation per draw (DiscreteGaussianTable.totalVariation). */
  readonly totalVariation: number;
}

export interface DistributedDpSpent {
  readonly epsilon: number;
  readonly order: number;
  /** The delta the RDP conversion used. */
  readonly rdpDelta: number;
  /** The delta the sampler's total variation takes. */
  readonly samplerDelta: number;
}

export { calibrateDistributedDp, roundedL2Bound, sumOfDiscreteGaussiansTau, type DistributedDpCalibration, type DistributedDpParameters } from "../../ir/distributed-dp-calibration.js";

/**
 * (epsilon, delta) after `rounds` rounds, each drawing maxClients d noise values: the RDP of
 * the rounds plus the sampler's ratio error, converted at the delta left after the sampler's
 * total variation (a fixed point as in dp-fedavg-epsilon.ts).
 */
export function distributedDpEpsilon(
  cal: DistributedDpCalibration,
  rounds: number,
  delta: number,
  sampler: SamplerError = DISCRETE_GAUSSIAN_SAMPLER_ERROR,
  options: { orders?: readonly number[]; conversion?: RdpConversion } = {},
): DistributedDpSpent {
  return distributedDpComposedEpsilon([{ calibration: cal, count: rounds }], delta, sampler, options);
}

/**
 * The same for releases of different calibrations (a run's rounds with its evaluations'
 * histograms): RDP adds order by order over every release, whatever its calibration, and so do
 * the sampler's ratio terms (per draw) and its total variation.
 */
export function distributedDpComposedEpsilon(
  releases: readonly DistributedDpReleases[],
  delta: number,
  sampler: SamplerError = DISCRETE_GAUSSIAN_SAMPLER_ERROR,
  options: { orders?: readonly number[]; conversion?: RdpConversion } = {},
): DistributedDpSpent {
  checkReleaseCounts(releases);
  const orders = options.orders ?? DEFAULT_RDP_ORDERS;
  const draws = releases.reduce((sum, r) => sum + r.count * r.calibration.maxClients * r.calibration.dimension, 0);
  const perRelease = releases.map((r) => distributedDpRoundRdp(r.calibration, orders));
  const eta = sampler.relativeError;
  const rdp = orders.map((alpha, i) => releases.reduce((sum, r, j) => sum + r.count * perRelease[j]![i]!, 0) + (draws * eta * (2 * alpha - 1)) / (alpha - 1));
  const share = (epsilon: number) => draws * sampler.totalVariation * (1 + Math.exp(epsilon));
  const at = (rdpDelta: number) => (rdpDelta > 0 ? rdpToEpsilon(orders, rdp, rdpDelta, options.conversion) : { epsilon: Infinity, order: NaN });
  let assumed = at(delta).epsilon;
  for (let pass = 0; pass < 50 && Number.isFinite(assumed); pass++) {
    const rdpDelta = delta - share(assumed);
    const spent = at(rdpDelta);
    if (spent.epsilon <= assumed) return { ...spent, rdpDelta, samplerDelta: share(spent.epsilon) };
    assumed = spent.epsilon;
  }
  return { epsilon: Infinity, order: NaN, rdpDelta: delta - share(assumed), samplerDelta: share(assumed) };
}

/** Epsilon at `delta` after `rounds` rounds by the named accountant: PLD (distributed-dp-pld.ts, the default) or the RDP bound above. */
export function distributedDpEpsilonBy(accountant: "pld" | "rdp", cal: DistributedDpCalibration, rounds: number, delta: number, alongside: readonly DistributedDpReleases[] = []): number {
  const releases = [{ calibration: cal, count: rounds }, ...alongside];
  return accountant === "rdp" ? distributedDpComposedEpsilon(releases, delta).epsilon : distributedDpComposedPldEpsilon(releases, delta);
}

/**
 * The noise multiplier z whose calibration spends `targetEpsilon` at `delta` after `rounds`
 * rounds by `accountant` (bisection; epsilon falls as z grows): the `target` form of the options.
 * `alongside`: the run's other releases (its evaluations' histograms), whose cost the target includes.
 */
export function noiseMultiplierForEpsilon(
  parameters: Omit<DistributedDpParameters, "noiseMultiplier">,
  targetEpsilon: number,
  rounds: number,
  delta: number,
  accountant: "pld" | "rdp" = "pld",
  alongside: readonly DistributedDpReleases[] = [],
): number {
  if (!(targetEpsilon > 0 && Number.isFinite(targetEpsilon))) throw ftError("FT346", { why: `the target epsilon must be a finite number > 0, got ${targetEpsilon}` });
  const epsilonAt = (z: number) => {
    const cal = calibrateDistributedDp({ ...parameters, noiseMultiplier: z });
    return distributedDpEpsilonBy(accountant, cal, rounds, delta, alongside);
  };
  let [lo, hi] = [1e-3, 1e3];
  if (epsilonAt(hi) > targetEpsilon) throw ftError("FT346", { why: `no noise multiplier up to ${hi} reaches epsilon ${targetEpsilon} in ${rounds} rounds at ${parameters.bits} bits` });
  // To 1e-4 relative, as calibrate.ts: each step of the PLD path builds a new PLD.
  while (hi / lo > 1 + 1e-4) {
    const mid = Math.sqrt(lo * hi);
    let spent: number;
    try {
      spent = epsilonAt(mid);
    } catch {
      spent = Infinity;
    }
    if (spent > targetEpsilon) lo = mid;
    else hi = mid;
  }
  return hi;
}
