/**
 * The privacy spent by DP-FedAvg as `fedtensor run` executes it: `rounds` compositions of the
 * Poisson-sampled Gaussian mechanism (rdp.ts; each client joins a round independently with
 * probability q, add/remove neighbours, sensitivity C of the fixed-denominator sum), plus what
 * the noise sampler adds to delta.
 *
 * The sampler is a finite-precision approximation of the Gaussian: each draw is within
 * `samplerDeltaPerDraw` of the exact normal in total variation (src/ir/normal.ts,
 * normalSamplerDeltaPerDraw = 2^-63). A run draws n = rounds x noiseDrawsPerRound normals (one
 * per model parameter a round, one more for adaptive clipping's count), so if the exact
 * mechanism is (eps, delta_rdp)-DP the sampled one is (eps, delta_rdp + (1 + e^eps) n d)-DP
 * (normal.ts's normalSamplerDelta). The RDP part is converted at the delta left over, and since
 * the sampler's share grows with eps, eps is found by a fixed-point iteration that only
 * stops where the share it assumed is at least the one of the eps it reports. Epsilon is
 * Infinity when the sampler alone would spend delta.
 *
 * Other Gaussian releases of the same clients without sampling (per-client evaluation's DP
 * histograms, src/lib/run/privacy.ts) compose by adding their RDP, order by order, to the
 * rounds' (each alpha / 2 sigma^2), their draws joining the sampler's share.
 */
import { ftError } from "../../errors/error.js";
import { PldAccountant } from "./pld/accountant.js";
import { computeRdp, DEFAULT_RDP_ORDERS, rdpToEpsilon } from "./rdp.js";

/**
 * A DP-FedAvg run's mechanism per round: the Poisson sampling rate, the noise multiplier and what
 * the noise sampler's draws add to delta.
 *
 * @example
 * const spent = dpFedAvgEpsilon({ samplingRate: 0.01, noiseMultiplier: 1.1, noiseDrawsPerRound: 199_210, samplerDeltaPerDraw: 0 } satisfies DpFedAvgMechanism, 100, 1e-5);
 */
export interface DpFedAvgMechanism {
  /** q: each client's probability of joining a round (Poisson sampling). */
  readonly samplingRate: number;
  /** z of the whole round (adaptive clipping's split keeps the round at z: dpNoiseSplit). */
  readonly noiseMultiplier: number;
  /** Normal draws a round: one per noised coordinate. */
  readonly noiseDrawsPerRound: number;
  /** What one draw of the sampler adds to delta. */
  readonly samplerDeltaPerDraw: number;
}

/**
 * dpFedAvgEpsilon's result: epsilon and how its delta splits between the RDP conversion and the
 * noise sampler.
 *
 * @example
 * const spent: DpFedAvgSpent = dpFedAvgEpsilon({ samplingRate: 0.01, noiseMultiplier: 1.1, noiseDrawsPerRound: 7850, samplerDeltaPerDraw: 0 }, 100, 1e-5);
 * console.log(spent.epsilon, spent.rdpDelta + spent.samplerDelta);
 */
export interface DpFedAvgSpent {
  readonly epsilon: number;
  /** The delta of the RDP conversion. */
  readonly rdpDelta: number;
  /** The delta the sampler's draws add. */
  readonly samplerDelta: number;
}

/**
 * Gaussian releases of every client, without sampling, composed with the rounds: `releases` of
 * noise multiplier `noiseMultiplier`, each of `drawsPerRelease` normal draws.
 *
 * @example
 * import { dpFedAvgEpsilon, type ComposedGaussian } from "fedtensor/lib";
 * // 100 rounds and 10 DP histograms of 10 bins at noise 5 (per-client evaluation's releases).
 * const spent = dpFedAvgEpsilon({ samplingRate: 0.01, noiseMultiplier: 1.1, noiseDrawsPerRound: 7850, samplerDeltaPerDraw: 0 }, 100, 1e-5, { noiseMultiplier: 5, releases: 10, drawsPerRelease: 10 } satisfies ComposedGaussian);
 */
export interface ComposedGaussian {
  readonly noiseMultiplier: number;
  readonly releases: number;
  readonly drawsPerRelease: number;
}

/**
 * (epsilon, delta)-DP after `rounds` rounds (and the `composed` releases): epsilon at `delta` in all, the sampler's share included.
 *
 * @example
 * import { dpFedAvgEpsilon } from "fedtensor/lib";
 * const spent = dpFedAvgEpsilon({ samplingRate: 100 / 1000, noiseMultiplier: 1, noiseDrawsPerRound: 0, samplerDeltaPerDraw: 0 }, 100, 1e-5);
 * console.log(spent.epsilon); // examples/dp-fedavg-mnist.json's run: q = 0.1, z = 1, 100 rounds
 */
export function dpFedAvgEpsilon(mechanism: DpFedAvgMechanism, rounds: number, delta: number, composed?: ComposedGaussian): DpFedAvgSpent {
  const { noiseDrawsPerRound: draws, samplerDeltaPerDraw: perDraw } = mechanism;
  if (!(Number.isInteger(draws) && draws >= 0)) throw ftError("FT305", { option: "noiseDrawsPerRound", why: `${draws} given; a count of draws is an integer >= 0` });
  if (!(perDraw >= 0 && perDraw < 1)) throw ftError("FT305", { option: "samplerDeltaPerDraw", why: `${perDraw} given; it is in [0, 1)` });
  const orders = DEFAULT_RDP_ORDERS;
  const roundsRdp = computeRdp({ samplingRate: mechanism.samplingRate, noiseMultiplier: mechanism.noiseMultiplier, steps: rounds }, orders);
  const composedRdp = composed === undefined ? undefined : computeRdp({ samplingRate: 1, noiseMultiplier: composed.noiseMultiplier, steps: composed.releases }, orders);
  const rdp = roundsRdp.map((r, k) => r + (composedRdp?.[k] ?? 0));
  const rdpEpsilon = (rdpDelta: number) => (rdpDelta > 0 ? rdpToEpsilon(orders, rdp, rdpDelta).epsilon : Infinity);
  const totalDraws = rounds * draws + (composed === undefined ? 0 : composed.releases * composed.drawsPerRelease);
  const share = (epsilon: number) => totalDraws * perDraw * (1 + Math.exp(epsilon));
  // The share assumed grows with each pass; the first pass whose epsilon is within it is valid.
  let assumed = rdpEpsilon(delta);
  for (let pass = 0; pass < 50 && Number.isFinite(assumed); pass++) {
    const rdpDelta = delta - share(assumed);
    const epsilon = rdpEpsilon(rdpDelta);
    if (epsilon <= assumed) return { epsilon, rdpDelta, samplerDelta: share(epsilon) };
    assumed = epsilon;
  }
  return { epsilon: Infinity, rdpDelta: delta - share(assumed), samplerDelta: share(assumed) };
}

/**
 * The same run's epsilon by the PLD accountant (./pld), the default: the rounds' PLDs composed,
 * with each round's noise draws' total variation (draws x per-draw bound) folded into that
 * round's PLD rather than charged to the whole run at e^eps (pmf.ts pldFromCurve), so that
 * epsilon stays a number however large it is. Memoised: a run asks after every round.
 *
 * @example
 * import { dpFedAvgEpsilon, dpFedAvgPldEpsilon } from "fedtensor/lib";
 * const mechanism = { samplingRate: 0.1, noiseMultiplier: 1, noiseDrawsPerRound: 0, samplerDeltaPerDraw: 0 };
 * console.log(dpFedAvgPldEpsilon(mechanism, 100, 1e-5), dpFedAvgEpsilon(mechanism, 100, 1e-5).epsilon); // the PLD's epsilon is the smaller
 */
export function dpFedAvgPldEpsilon(mechanism: DpFedAvgMechanism, rounds: number, delta: number): number {
  const { samplingRate: q, noiseMultiplier: z, noiseDrawsPerRound: draws, samplerDeltaPerDraw: perDraw } = mechanism;
  if (!(Number.isInteger(draws) && draws >= 0)) throw ftError("FT305", { option: "noiseDrawsPerRound", why: `${draws} given; a count of draws is an integer >= 0` });
  if (!(Number.isInteger(rounds) && rounds >= 0)) throw ftError("FT305", { option: "rounds", why: `${rounds} given; a count of rounds is an integer >= 0` });
  if (z === 0) return rounds === 0 || q === 0 ? 0 : Infinity;
  const key = `${q}:${z}:${draws}:${perDraw}:${rounds}:${delta}`;
  let epsilon = pldEpsilons.get(key);
  if (epsilon === undefined) {
    epsilon = new PldAccountant().step(q, z, rounds, draws * perDraw).epsilon(delta);
    if (pldEpsilons.size >= 4096) pldEpsilons.delete(pldEpsilons.keys().next().value!);
    pldEpsilons.set(key, epsilon);
  }
  return epsilon;
}
const pldEpsilons = new Map<string, number>();

/**
 * Andrew et al.'s split of a round's noise multiplier z between the clipped-count estimate
 * (std sigma_b, sensitivity 1/2) and the update: z_delta = (z^-2 - (2 sigma_b)^-2)^(-1/2), so
 * the round is as private as one Gaussian mechanism of multiplier z. Undefined when sigma_b is
 * too small for z (the count alone would spend the budget).
 *
 * @example
 * import { dpNoiseSplit } from "fedtensor/lib";
 * console.log(dpNoiseSplit(1, 5)); // about 1.005: the update's multiplier when the clipped count takes sigma_b = 5
 * console.log(dpNoiseSplit(1, 0.4)); // undefined: the count alone would spend the round's budget
 */
export function dpNoiseSplit(noiseMultiplier: number, countStddev: number): number | undefined {
  if (noiseMultiplier === 0) return 0;
  const rest = noiseMultiplier ** -2 - (2 * countStddev) ** -2;
  return rest > 0 ? rest ** -0.5 : undefined;
}
