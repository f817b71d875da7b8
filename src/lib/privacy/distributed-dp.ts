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
import { DISCRETE_GAUSSIAN_SAMPLER_ERROR } from "./discrete-gaussian.js";
import { DEFAULT_RDP_ORDERS, rdpToEpsilon, type RdpConversion } from "./rdp.js";

export interface DistributedDpParameters {
  /** c: each client's vector is clipped to this L2 norm (model units). */
  readonly clip: number;
  /** z: with minClients survivors the sum's noise has standard deviation z c (before the rounding's inflation of c to B / gamma). */
  readonly noiseMultiplier: number;
  /** The modulus 2^bits of the sum, 2 <= bits <= 30. */
  readonly bits: number;
  /** The fewest clients whose noise the sum is guaranteed to carry (the survivors SecAgg+ needs). */
  readonly minClients: number;
  /** The most clients summed: fixes gamma so that their sum fits 2^bits. */
  readonly maxClients: number;
  /** d: the rotated (padded, power-of-two) length. */
  readonly dimension: number;
  /** Conditional rounding's beta in (0, 1): default exp(-1/2), as TFF. */
  readonly beta?: number;
  /** Standard deviations of the aggregate that fit the modulus: default 4. */
  readonly kStddevs?: number;
}

export interface DistributedDpCalibration extends Required<DistributedDpParameters> {
  /** gamma: model units to integer units. */
  readonly scale: number;
  /** sigma: each client's discrete Gaussian, in integer units. */
  readonly localSigma: number;
  /** B: the L2 norm bound of a rounded client vector (integer units): the sensitivity. */
  readonly l2Bound: number;
  /** B min(sqrt(d), B): its L1 bound. */
  readonly l1Bound: number;
  /** The noise multiplier the sum really has at minClients: sqrt(minClients) sigma / B (below z by the rounding). */
  readonly effectiveNoiseMultiplier: number;
}

const calibrationError = (why: string) => ftError("FT346", { why });

function checkParameters(p: DistributedDpParameters): Required<DistributedDpParameters> {
  const beta = p.beta ?? Math.exp(-0.5);
  const kStddevs = p.kStddevs ?? 4;
  const positive = { clip: p.clip, noiseMultiplier: p.noiseMultiplier, kStddevs };
  for (const [name, v] of Object.entries(positive)) if (!(v > 0 && Number.isFinite(v))) throw calibrationError(`${name} must be a finite number > 0, got ${v}`);
  if (!(Number.isInteger(p.bits) && p.bits >= 2 && p.bits <= 30)) throw calibrationError(`bits must be a whole number from 2 to 30, got ${p.bits}`);
  if (!(Number.isInteger(p.minClients) && p.minClients >= 1)) throw calibrationError(`minClients must be a whole number >= 1, got ${p.minClients}`);
  if (!(Number.isInteger(p.maxClients) && p.maxClients >= p.minClients)) throw calibrationError(`maxClients must be a whole number >= minClients (${p.minClients}), got ${p.maxClients}`);
  if (!(Number.isInteger(p.dimension) && p.dimension >= 1 && (p.dimension & (p.dimension - 1)) === 0)) throw calibrationError(`the dimension must be a power of two, got ${p.dimension}`);
  if (!(beta > 0 && beta < 1)) throw calibrationError(`beta must be in (0, 1), got ${beta}`);
  return { ...p, beta, kStddevs };
}

/** The rounded vector's L2 bound for a scaled norm `scaledClip`: their Theorem 1 (conditional rounding with beta). */
export function roundedL2Bound(scaledClip: number, beta: number, d: number): number {
  const plain = scaledClip + Math.sqrt(d);
  const conditional = Math.sqrt(scaledClip * scaledClip + d / 4 + Math.sqrt(2 * Math.log(1 / beta)) * (scaledClip + Math.sqrt(d) / 2));
  return Math.min(plain, conditional);
}

/** gamma, sigma and the bounds from the parameters (the header's formulas); FT346 when 2^bits cannot hold the sum. */
export function calibrateDistributedDp(parameters: DistributedDpParameters): DistributedDpCalibration {
  const p = checkParameters(parameters);
  const { clip: c, noiseMultiplier: z, bits, minClients, maxClients: n, dimension: d, kStddevs: k, beta } = p;
  const room = 2 ** (2 * bits) - 4 * k * k * n * 0.25;
  if (!(room > 0)) throw calibrationError(`${bits} bits cannot hold ${k} standard deviations of ${n} clients' rounding alone: raise bits or lower maxClients`);
  const modelSigma = (z * c) / Math.sqrt(minClients);
  const scale = Math.sqrt(room) / (2 * k * Math.sqrt((n * n * c * c) / d + n * modelSigma * modelSigma));
  const localSigma = scale * modelSigma;
  if (localSigma < 1) throw calibrationError(`each client's noise would be ${localSigma.toPrecision(3)} integer steps (below 1, where the discrete Gaussian's sum is far from one): raise bits`);
  const l2Bound = roundedL2Bound(scale * c, beta, d);
  return {
    ...p,
    scale,
    localSigma,
    l2Bound,
    l1Bound: l2Bound * Math.min(Math.sqrt(d), l2Bound),
    effectiveNoiseMultiplier: (Math.sqrt(minClients) * localSigma) / l2Bound,
  };
}

/** tau of Theorem 1 for n clients' noise of standard deviation sigma each. */
export function sumOfDiscreteGaussiansTau(sigma: number, n: number): number {
  let tau = 0;
  for (let k = 1; k < n; k++) tau += Math.exp(-2 * Math.PI * Math.PI * sigma * sigma * (k / (k + 1)));
  return 10 * tau;
}

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
  if (!(Number.isInteger(rounds) && rounds >= 0)) throw ftError("FT305", { option: "rounds", why: `${rounds} given; a count of rounds is an integer >= 0` });
  const orders = options.orders ?? DEFAULT_RDP_ORDERS;
  const draws = rounds * cal.maxClients * cal.dimension;
  const perRound = distributedDpRoundRdp(cal, orders);
  const eta = sampler.relativeError;
  const rdp = perRound.map((r, i) => rounds * r + (draws * eta * (2 * orders[i]! - 1)) / (orders[i]! - 1));
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

/**
 * The noise multiplier z whose calibration spends `targetEpsilon` at `delta` after `rounds`
 * rounds (bisection; epsilon falls as z grows): the `target` form of the options.
 */
export function noiseMultiplierForEpsilon(
  parameters: Omit<DistributedDpParameters, "noiseMultiplier">,
  targetEpsilon: number,
  rounds: number,
  delta: number,
): number {
  if (!(targetEpsilon > 0 && Number.isFinite(targetEpsilon))) throw calibrationError(`the target epsilon must be a finite number > 0, got ${targetEpsilon}`);
  const epsilonAt = (z: number) => {
    const cal = calibrateDistributedDp({ ...parameters, noiseMultiplier: z });
    return distributedDpEpsilon(cal, rounds, delta).epsilon;
  };
  let [lo, hi] = [1e-3, 1e3];
  if (epsilonAt(hi) > targetEpsilon) throw calibrationError(`no noise multiplier up to ${hi} reaches epsilon ${targetEpsilon} in ${rounds} rounds at ${parameters.bits} bits`);
  for (let i = 0; i < 60; i++) {
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
