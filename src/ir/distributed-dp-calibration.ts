/**
 * The calibration of distributed DP's distributed discrete Gaussian (Kairouz, Liu and Steinke
 * 2021; TFF's DistributedDpSumFactory): the scale gamma, each client's noise and the rounded
 * vectors' norm bounds, from the clip, the noise multiplier, the bits, the clients and the
 * rotated length (the formulas are in src/lib/privacy/distributed-dp.ts's header, which
 * accounts for it). Pure arithmetic, shared by the traced aggregator (src/front/distributed-dp.ts)
 * and the host's codec and accountant.
 */
import { ftError } from "../errors/error.js";

/**
 * What distributed DP is calibrated from: the clip, the noise multiplier, the bits of the
 * modulus, the clients the sum carries noise of at least and at most, and the rotated length.
 *
 * @example
 * const parameters: DistributedDpParameters = { clip: 1, noiseMultiplier: 1, bits: 20, minClients: 8, maxClients: 10, dimension: 1024 };
 */
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

/**
 * The calibration: the parameters with their defaults, and the scale, each client's discrete
 * Gaussian and the rounded vectors' norm bounds that the accountants read.
 *
 * @example
 * const { scale, localSigma, effectiveNoiseMultiplier } = calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 20, minClients: 8, maxClients: 10, dimension: 1024 });
 */
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

/**
 * gamma, sigma and the bounds from the parameters (the header's formulas); FT346 when 2^bits
 * cannot hold the sum. What distributedDpPldEpsilon and distributedDpPldBound price.
 *
 * @example
 * import { calibrateDistributedDp, distributedDpPldEpsilon } from "fedtensor/lib";
 * const calibration = calibrateDistributedDp({ clip: 1, noiseMultiplier: 2, bits: 20, minClients: 8, maxClients: 10, dimension: 1024 });
 * const epsilon = distributedDpPldEpsilon(calibration, 100, 1e-5); // about 33
 */
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

