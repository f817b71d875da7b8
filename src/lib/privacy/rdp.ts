/**
 * Rényi differential privacy (RDP) accounting for the sampled Gaussian mechanism: each step
 * adds N(0, (z C)^2) noise to a sum over a Poisson sample (rate q) of examples or clients
 * whose contributions are clipped to L2 norm C (DP-SGD, DP-FedAvg).
 *
 * RDP of one step at order alpha is log(A_alpha) / (alpha - 1) (Mironov 2017; Mironov, Talwar
 * and Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism"), A_alpha by
 * their section 3.3 series for integer orders and section 3.4 for fractional ones, as
 * TensorFlow Privacy and Opacus compute it (all in log space). RDP composes additively over
 * steps. Conversion to (epsilon, delta):
 * - "balle2020" (default, as Opacus and current TF Privacy): Balle et al. 2020, "Hypothesis
 *   testing interpretations and Rényi differential privacy", Theorem 21:
 *   eps = rdp + log((alpha-1)/alpha) - (log(delta) + log(alpha)) / (alpha - 1);
 * - "classic": Mironov 2017, Proposition 3: eps = rdp + log(1/delta) / (alpha - 1).
 * Both minimise over the orders given.
 */
import { ftError } from "../../errors/error.js";

/**
 * The orders TF Privacy's compute_dp_sgd_privacy and Opacus use by default.
 *
 * @example
 * import { DEFAULT_RDP_ORDERS } from "fedtensor/lib";
 * console.log(DEFAULT_RDP_ORDERS.length, DEFAULT_RDP_ORDERS[0], DEFAULT_RDP_ORDERS.at(-1)); // 151 orders from 1.1 to 63
 */
export const DEFAULT_RDP_ORDERS: readonly number[] = [
  ...Array.from({ length: 99 }, (_, i) => 1 + (i + 1) / 10),
  ...Array.from({ length: 52 }, (_, i) => 12 + i),
];

/**
 * How RDP converts to (epsilon, delta): "balle2020" (Balle et al. 2020, tighter, the default) or
 * "classic" (Mironov 2017).
 *
 * @example
 * const accountant = new RdpAccountant({ conversion: "balle2020" satisfies RdpConversion });
 */
export type RdpConversion = "balle2020" | "classic";

/**
 * The sampled Gaussian mechanism composed over steps: its sampling rate q, noise multiplier z and
 * number of steps.
 *
 * @example
 * const epsilon = sampledGaussianEpsilon({ samplingRate: 0.01, noiseMultiplier: 1.1, steps: 1000 } satisfies SampledGaussian, 1e-5);
 */
export interface SampledGaussian {
  /** Sampling rate q in [0, 1]. */
  readonly samplingRate: number;
  /** Noise multiplier z: the noise's standard deviation over the clipping norm. */
  readonly noiseMultiplier: number;
  /** Number of steps (rounds) composed. */
  readonly steps: number;
}

/**
 * What an RDP accountant reports: the epsilon and the RDP order that gave it.
 *
 * @example
 * const spent: PrivacySpent = new RdpAccountant().step(0.01, 1.1, 1000).spent(1e-5);
 * console.log(spent.epsilon, spent.order);
 */
export interface PrivacySpent {
  readonly epsilon: number;
  /** The order at which the minimum was reached. */
  readonly order: number;
}

/** log(exp(a) + exp(b)) without overflow. */
function logAdd(a: number, b: number): number {
  const [lo, hi] = a < b ? [a, b] : [b, a];
  if (lo === -Infinity) return hi;
  return Math.log1p(Math.exp(lo - hi)) + hi;
}

/** log(exp(a) - exp(b)) for a >= b. */
function logSub(a: number, b: number): number {
  if (b === -Infinity) return a;
  if (a <= b) return -Infinity;
  return Math.log(Math.expm1(a - b)) + b;
}

/**
 * log(erfc(x)), accurate to about 1e-7 relative in erfc and without underflow for large x:
 * Numerical Recipes' erfcc has the form t * exp(P(t) - x^2), whose log needs no exp.
 */
export function logErfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const poly =
    -z * z -
    1.26551223 +
    t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const logErfcAbs = Math.log(t) + poly;
  return x >= 0 ? logErfcAbs : Math.log(2 - Math.exp(logErfcAbs));
}

/** log A_alpha for an integer order: a finite binomial sum (MTZ 2019, section 3.3). */
function logAIntegerOrder(q: number, sigma: number, alpha: number): number {
  let logA = -Infinity;
  let logBinom = 0; // log C(alpha, i), updated term by term
  for (let i = 0; i <= alpha; i++) {
    if (i > 0) logBinom += Math.log((alpha - i + 1) / i);
    const logTerm = logBinom + i * Math.log(q) + (alpha - i) * Math.log1p(-q) + (i * i - i) / (2 * sigma * sigma);
    logA = logAdd(logA, logTerm);
  }
  return logA;
}

/** log A_alpha for a fractional order: two series with erfc tails (MTZ 2019, section 3.4). */
function logAFractionalOrder(q: number, sigma: number, alpha: number): number {
  let [logA0, logA1] = [-Infinity, -Infinity];
  const z0 = sigma * sigma * Math.log(1 / q - 1) + 0.5;
  let coef = 1; // C(alpha, i), generalised binomial: its sign alternates past alpha
  for (let i = 0; ; i++) {
    if (i > 0) coef *= (alpha - i + 1) / i;
    const logCoef = Math.log(Math.abs(coef));
    const j = alpha - i;
    const logT0 = logCoef + i * Math.log(q) + j * Math.log1p(-q);
    const logT1 = logCoef + j * Math.log(q) + i * Math.log1p(-q);
    const logE0 = Math.log(0.5) + logErfc((i - z0) / (Math.SQRT2 * sigma));
    const logE1 = Math.log(0.5) + logErfc((z0 - j) / (Math.SQRT2 * sigma));
    const logS0 = logT0 + (i * i - i) / (2 * sigma * sigma) + logE0;
    const logS1 = logT1 + (j * j - j) / (2 * sigma * sigma) + logE1;
    if (coef > 0) {
      logA0 = logAdd(logA0, logS0);
      logA1 = logAdd(logA1, logS1);
    } else {
      logA0 = logSub(logA0, logS0);
      logA1 = logSub(logA1, logS1);
    }
    if (Math.max(logS0, logS1) < -30) break;
  }
  return logAdd(logA0, logA1);
}

function checkMechanism({ samplingRate: q, noiseMultiplier: z, steps }: SampledGaussian): void {
  if (!(q >= 0 && q <= 1)) throw ftError("FT305", { option: "samplingRate", why: `${q} given; a sampling rate is in [0, 1]` });
  if (!(z >= 0) || !Number.isFinite(z)) throw ftError("FT305", { option: "noiseMultiplier", why: `${z} given; a noise multiplier is a finite number >= 0` });
  if (!(Number.isInteger(steps) && steps >= 0)) throw ftError("FT305", { option: "steps", why: `${steps} given; steps is an integer >= 0` });
}

/** RDP at one order of one step of the sampled Gaussian mechanism. */
function rdpOneStep(q: number, sigma: number, alpha: number): number {
  if (q === 0) return 0;
  if (sigma === 0) return Infinity;
  if (q === 1) return alpha / (2 * sigma * sigma);
  if (!Number.isFinite(alpha)) return Infinity;
  const logA = Number.isInteger(alpha) ? logAIntegerOrder(q, sigma, alpha) : logAFractionalOrder(q, sigma, alpha);
  return logA / (alpha - 1);
}

/**
 * RDP of `steps` compositions of the sampled Gaussian mechanism, one value per order (orders > 1).
 *
 * @example
 * import { computeRdp, DEFAULT_RDP_ORDERS, rdpToEpsilon } from "fedtensor/lib";
 * const rdp = computeRdp({ samplingRate: 0.01, noiseMultiplier: 1.1, steps: 1000 });
 * console.log(rdpToEpsilon(DEFAULT_RDP_ORDERS, rdp, 1e-5).epsilon); // epsilon at delta 1e-5 after 1000 steps
 */
export function computeRdp(mechanism: SampledGaussian, orders: readonly number[] = DEFAULT_RDP_ORDERS): number[] {
  checkMechanism(mechanism);
  for (const alpha of orders) {
    if (!(alpha > 1)) throw ftError("FT305", { option: "orders", why: `${alpha} given; RDP orders are > 1` });
  }
  return orders.map((alpha) => rdpOneStep(mechanism.samplingRate, mechanism.noiseMultiplier, alpha) * mechanism.steps);
}

/**
 * The smallest epsilon over the orders for which (epsilon, delta)-DP follows from the RDP curve.
 *
 * @example
 * import { computeRdp, rdpToEpsilon } from "fedtensor/lib";
 * const orders = [2, 4, 8, 16, 32];
 * const spent = rdpToEpsilon(orders, computeRdp({ samplingRate: 0.1, noiseMultiplier: 1, steps: 100 }, orders), 1e-5, "classic");
 * console.log(spent.epsilon, spent.order); // the best epsilon among these orders, and which order gave it
 */
export function rdpToEpsilon(
  orders: readonly number[],
  rdp: readonly number[],
  delta: number,
  conversion: RdpConversion = "balle2020",
): PrivacySpent {
  if (!(delta > 0 && delta < 1)) throw ftError("FT305", { option: "delta", why: `${delta} given; delta is in (0, 1)` });
  if (orders.length !== rdp.length || orders.length === 0) {
    throw ftError("FT305", { option: "orders", why: `${orders.length} orders for ${rdp.length} RDP values; give one RDP value per order` });
  }
  let best: PrivacySpent = { epsilon: Infinity, order: NaN };
  orders.forEach((alpha, k) => {
    const r = rdp[k]!;
    const epsilon =
      conversion === "classic"
        ? r - Math.log(delta) / (alpha - 1)
        : r + Math.log1p(-1 / alpha) - (Math.log(delta) + Math.log(alpha)) / (alpha - 1);
    if (epsilon < best.epsilon) best = { epsilon: Math.max(0, epsilon), order: alpha };
  });
  return best;
}

/** Epsilon at delta after `steps` of the sampled Gaussian mechanism. */
export function sampledGaussianEpsilon(
  mechanism: SampledGaussian,
  delta: number,
  options: { orders?: readonly number[]; conversion?: RdpConversion } = {},
): PrivacySpent {
  const orders = options.orders ?? DEFAULT_RDP_ORDERS;
  return rdpToEpsilon(orders, computeRdp(mechanism, orders), delta, options.conversion);
}
