/**
 * The privacy spent by DP-FedAvg as `fedtensor run` executes it: `rounds` compositions of the
 * Poisson-sampled Gaussian mechanism (rdp.ts; each client joins a round independently with
 * probability q, add/remove neighbours, sensitivity C of the fixed-denominator sum), plus what
 * the noise sampler adds to delta.
 *
 * A sampler is a finite-precision approximation of the Gaussian; every draw's deviation from
 * the ideal distribution adds at most `samplerDeltaPerDraw` to delta (src/ir/normal.ts states
 * it). A run draws `noiseDrawsPerRound` normals a round (one per model parameter, one more for
 * adaptive clipping's count), so the RDP part is converted at the delta left over:
 *   delta_rdp = delta - rounds * noiseDrawsPerRound * samplerDeltaPerDraw,
 * and the reported (epsilon, delta) covers both. Epsilon is Infinity when the sampler alone
 * spends delta.
 */
import { ftError } from "../../errors/error.js";
import { sampledGaussianEpsilon } from "./rdp.js";

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

export interface DpFedAvgSpent {
  readonly epsilon: number;
  /** The delta of the RDP conversion. */
  readonly rdpDelta: number;
  /** The delta the sampler's draws add. */
  readonly samplerDelta: number;
}

/** (epsilon, delta)-DP after `rounds` rounds: epsilon at `delta` in all, the sampler's share included. */
export function dpFedAvgEpsilon(mechanism: DpFedAvgMechanism, rounds: number, delta: number): DpFedAvgSpent {
  const { noiseDrawsPerRound: draws, samplerDeltaPerDraw: perDraw } = mechanism;
  if (!(Number.isInteger(draws) && draws >= 0)) throw ftError("FT305", { option: "noiseDrawsPerRound", why: `${draws} given; a count of draws is an integer >= 0` });
  if (!(perDraw >= 0 && perDraw < 1)) throw ftError("FT305", { option: "samplerDeltaPerDraw", why: `${perDraw} given; it is in [0, 1)` });
  const samplerDelta = rounds * draws * perDraw;
  const rdpDelta = delta - samplerDelta;
  if (!(rdpDelta > 0)) return { epsilon: Infinity, rdpDelta, samplerDelta };
  const { epsilon } = sampledGaussianEpsilon({ samplingRate: mechanism.samplingRate, noiseMultiplier: mechanism.noiseMultiplier, steps: rounds }, rdpDelta);
  return { epsilon, rdpDelta, samplerDelta };
}
