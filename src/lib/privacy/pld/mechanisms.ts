/**
 * Hockey-stick curves (pmf.ts's HockeyStickCurve) of the mechanisms FedTensor releases with,
 * each for the dominating pair of its neighbouring relation:
 *
 * - The Poisson-subsampled Gaussian (sensitivity 1, noise multiplier sigma, rate q), for
 *   add/remove neighbours, as dp_accounting's GaussianPrivacyLoss with sampling_prob:
 *   "remove" P = (1-q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2), loss log((1-q) + q e^((2x-1)/(2s^2)));
 *   "add"    P = N(0, s^2), Q = (1-q) N(0, s^2) + q N(1, s^2), loss -log((1-q) + q e^((2x-1)/(2s^2))).
 *   Both losses are monotone in x, so delta(eps) = P(L > eps) - e^eps Q(L > eps) is a pair of
 *   normal tails at the threshold x*(eps) (Koskela et al. 2020, section 6; Zhu, Dong and Wang
 *   2022). q = 1 is the Gaussian mechanism, whose two sides agree.
 * - The discrete Gaussian N_Z(0, s^2) with integer sensitivity d (Canonne, Kamath and Steinke
 *   2020): loss (d^2 - 2 k d) / (2 s^2) at k ~ N_Z(0, s^2), summed exactly over k.
 *
 * Each curve's grid range is where its losses have more than `tail` mass: outside it the
 * connect-the-dots construction is pessimistic anyway (pmf.ts), so the range costs tightness
 * only, never soundness.
 */
import { ftError } from "../../../errors/error.js";
import { logNormalSf } from "./normal-tail.js";
import type { HockeyStickCurve } from "./pmf.js";

export type Adjacency = "remove" | "add";

/** The first eps in the direction `step` (+1 up, -1 down) from `start` where `small(eps)` holds (doubling steps). */
function searchOut(start: number, step: 1 | -1, small: (eps: number) => boolean): number {
  let width = 0.5;
  let eps = start;
  for (let i = 0; i < 200 && !small(eps); i++, width *= 1.5) eps += step * width;
  return eps;
}

/**
 * H_{e^eps}(P || Q) for eps >= 0 of the two sides: "remove" and "add" are each other's pair with
 * roles swapped, so each side's `reversed` is the other's `delta`.
 */
function subsampledGaussianDeltas(q: number, s: number): Record<Adjacency, (eps: number) => number> {
  const logQ = Math.log(q);
  const xOf = (exponent: number) => s * s * exponent + 0.5; // x with (2x - 1) / (2 s^2) = exponent
  const remove = (eps: number): number => {
    // e^((2x*-1)/(2s^2)) = (e^eps - (1-q)) / q; delta = q [Sf((x-1)/s) - e^e Sf(x/s)].
    const e = Math.log(Math.expm1(eps) + q) - logQ;
    const x = xOf(e);
    return Math.max(0, q * (Math.exp(logNormalSf((x - 1) / s)) - Math.exp(e + logNormalSf(x / s))));
  };
  const ceiling = -Math.log1p(-q);
  const add = (eps: number): number => {
    if (eps >= ceiling) return 0;
    // e^((2x*-1)/(2s^2)) = (e^-eps - (1-q)) / q; delta = e^eps q [e^e Cdf(x/s) - Cdf((x-1)/s)].
    const e = Math.log(Math.expm1(-eps) + q) - logQ;
    const x = xOf(e);
    return Math.max(0, Math.exp(eps) * q * (Math.exp(e + logNormalSf(-x / s)) - Math.exp(logNormalSf(-(x - 1) / s))));
  };
  return q === 1 ? { remove, add: remove } : { remove, add };
}

/** The Poisson-subsampled Gaussian's curve for one side of add/remove adjacency. */
export function subsampledGaussianCurve(samplingRate: number, noiseMultiplier: number, adjacency: Adjacency, tail = 1e-15): HockeyStickCurve {
  const [q, s] = [samplingRate, noiseMultiplier];
  if (!(q > 0 && q <= 1)) throw ftError("FT305", { option: "samplingRate", why: `${q} given; a sampling rate is in (0, 1]` });
  if (!(s > 0 && Number.isFinite(s))) throw ftError("FT305", { option: "noiseMultiplier", why: `${s} given; a finite number > 0` });
  const deltas = subsampledGaussianDeltas(q, s);
  const other: Adjacency = adjacency === "remove" ? "add" : "remove";
  const delta = deltas[adjacency];
  const reversed = deltas[other];
  // delta(eps) for eps < 0 is 1 - e^eps + e^eps reversed(-eps); it reaches 1 - e^eps where the loss has no mass below.
  const lowerMassBelow = (eps: number) => (eps >= 0 ? 1 : Math.exp(eps) * reversed(-eps)) <= tail;
  const floor = adjacency === "remove" ? Math.log1p(-q) : -Infinity;
  const lo = Number.isFinite(floor) ? floor : searchOut(0, -1, lowerMassBelow);
  const hi = adjacency === "add" && q < 1 ? -Math.log1p(-q) : searchOut(0, 1, (eps) => delta(eps) <= tail);
  return { delta, reversed, lossRange: [lo, hi] };
}

/** The discrete Gaussian N_Z(0, sigma^2)'s curve for an integer sensitivity (its two sides agree by symmetry). */
export function discreteGaussianCurve(sigma: number, sensitivity: number, tail = 1e-15): HockeyStickCurve {
  if (!(sigma > 0 && Number.isFinite(sigma))) throw ftError("FT305", { option: "sigma", why: `${sigma} given; a finite number > 0` });
  if (!(Number.isInteger(sensitivity) && sensitivity >= 1)) throw ftError("FT305", { option: "sensitivity", why: `${sensitivity} given; an integer >= 1` });
  const d = sensitivity;
  // k in [-K, K]: beyond, e^(-k^2/(2 s^2)) / Z < 1e-40, added to every delta as `cut`.
  const K = Math.ceil(sigma * 14 + d + 1);
  const logWeight = (k: number) => -(k * k) / (2 * sigma * sigma);
  let norm = 0;
  for (let k = -K; k <= K; k++) norm += Math.exp(logWeight(k));
  // cdf[k + K] = P(k' <= k), summed from the far left (small terms first).
  const cdf = new Float64Array(2 * K + 1);
  let acc = 0;
  for (let k = -K; k <= K; k++) cdf[k + K] = acc += Math.exp(logWeight(k)) / norm;
  const F = (k: number) => (k < -K ? 0 : k > K ? 1 : cdf[k + K]!);
  const cut = 1e-40;
  const loss = (k: number) => (d * d - 2 * k * d) / (2 * sigma * sigma);
  // L(k) > eps  <=>  k <= m(eps) = ceil((d^2 - 2 s^2 eps) / (2 d)) - 1; Q(k <= m) = P(k <= m - d).
  const delta = (eps: number): number => {
    const m = Math.ceil((d * d - 2 * sigma * sigma * eps) / (2 * d)) - 1;
    return Math.max(0, F(m) - Math.exp(eps) * F(m - d)) + cut;
  };
  const lowerTail = (eps: number): number => F(-(Math.ceil((d * d - 2 * sigma * sigma * eps) / (2 * d)) - 1) - 1);
  const lo = Math.max(loss(K), searchOut(0, -1, (eps) => lowerTail(eps) <= tail));
  const hi = Math.min(loss(-K), searchOut(Math.max(0, lo), 1, (eps) => delta(eps) <= tail));
  return { delta, reversed: delta, lossRange: [lo, hi] };
}
