/**
 * The PLD accountant (docs/algorithms.md "Accounting: PLD and RDP"): FedTensor's default, as
 * Google's dp_accounting PLDAccountant and Opacus's PRV accountant are theirs. A training loop
 * calls `step(q, z)` for each round of the Poisson-subsampled Gaussian mechanism (or
 * `stepDiscreteGaussian`) and asks `epsilon(delta)` at any time.
 *
 * Add/remove adjacency: the "remove" and "add" sides are composed separately and the worse
 * epsilon (or delta) of the two is reported, as dp_accounting does for ADD_OR_REMOVE_ONE:
 * tighter than taking the worse side of each step. Identical steps compose by one power of
 * the FFT (pmf.ts selfCompose), different ones by convolution; the per-step PLDs are kept, so
 * asking after every round costs one composition.
 *
 * Plain TypeScript without Node imports: it runs in the browser page's bundle as well.
 */
import { ftError } from "../../../errors/error.js";
import { discreteGaussianCurve, subsampledGaussianCurve, type Adjacency } from "./mechanisms.js";
import { compose, deltaForEpsilon, epsilonForDelta, pldFromCurve, selfCompose, type HockeyStickCurve, type Pld } from "./pmf.js";

/**
 * PldAccountant's options: the grid step of the losses and the probability mass left out in the
 * tails.
 *
 * @example
 * const accountant = new PldAccountant({ interval: 1e-3 } satisfies PldAccountantOptions); // a coarser, faster grid
 */
export interface PldAccountantOptions {
  /** The grid step of the losses (dp_accounting's value_discretization_interval); 1e-4 by default. */
  readonly interval?: number;
  /** The mass each truncation may leave out (and add to delta); 1e-15 by default. */
  readonly tail?: number;
}

/** One kind of step: the curves of its two sides and how many times it was taken. */
interface Entry {
  readonly curves: () => Record<Adjacency, HockeyStickCurve>;
  readonly samplerTv: number;
  count: number;
}

/** Per-step PLDs by mechanism and grid, shared by every accountant (building one is most of the cost of a short run). */
const stepCache = new Map<string, Record<Adjacency, Pld>>();
const CACHE_SIZE = 16;

/**
 * The privacy-loss-distribution accountant (Google's dp_accounting PLD method), the default: it
 * composes the rounds' privacy loss distributions on a grid and gives the tightest epsilon for a
 * delta; `step` accounts Poisson-subsampled Gaussian rounds, `stepDiscreteGaussian` discrete
 * Gaussian releases.
 *
 * @example
 * const accountant = new PldAccountant();
 * accountant.step(0.01, 1.1, 1000); // 1,000 rounds, q = 0.01, z = 1.1
 * console.log(accountant.epsilon(1e-5));
 */
export class PldAccountant {
  readonly interval: number;
  readonly tail: number;
  readonly #entries = new Map<string, Entry>();
  #composed: Record<Adjacency, Pld> | undefined;
  #steps = 0;

  constructor(options: PldAccountantOptions = {}) {
    this.interval = options.interval ?? 1e-4;
    this.tail = options.tail ?? 1e-15;
    if (!(this.interval > 0 && this.interval <= 0.1)) throw ftError("FT305", { option: "interval", why: `${this.interval} given; a grid step in (0, 0.1]` });
    if (!(this.tail > 0 && this.tail < 1e-6)) throw ftError("FT305", { option: "tail", why: `${this.tail} given; a truncated mass in (0, 1e-6)` });
  }

  /**
   * Accounts `count` rounds of the Poisson-subsampled Gaussian mechanism with sampling rate q,
   * noise multiplier z and sensitivity 1 (FT305 for q outside [0, 1], z not a finite number > 0,
   * count not a whole number >= 0). `samplerTv` is the total variation of one round's noise
   * sampler from the exact normal (its draws times the per-draw bound), folded into the round's
   * PLD (pmf.ts pldFromCurve). Rate-0 rounds cost nothing.
   */
  step(samplingRate: number, noiseMultiplier: number, count = 1, samplerTv = 0): this {
    if (!(samplingRate >= 0 && samplingRate <= 1)) throw ftError("FT305", { option: "samplingRate", why: `${samplingRate} given; a sampling rate is in [0, 1]` });
    if (!(noiseMultiplier > 0 && Number.isFinite(noiseMultiplier))) throw ftError("FT305", { option: "noiseMultiplier", why: `${noiseMultiplier} given; the PLD accountant takes a finite noise multiplier > 0` });
    if (samplingRate === 0) return this.#count(count);
    const key = `gaussian:${samplingRate}:${noiseMultiplier}:${samplerTv}`;
    return this.#add(key, count, samplerTv, () => {
      const remove = subsampledGaussianCurve(samplingRate, noiseMultiplier, "remove", this.tail);
      // At rate 1 (the Gaussian mechanism) the two sides agree: one PLD serves both.
      return { remove, add: samplingRate === 1 ? remove : subsampledGaussianCurve(samplingRate, noiseMultiplier, "add", this.tail) };
    });
  }

  /** Accounts `count` releases of the discrete Gaussian N_Z(0, sigma^2) with an integer sensitivity (symmetric: both sides alike). */
  stepDiscreteGaussian(sigma: number, sensitivity: number, count = 1): this {
    const key = `discrete:${sigma}:${sensitivity}`;
    return this.#add(key, count, 0, () => {
      const curve = discreteGaussianCurve(sigma, sensitivity, this.tail);
      return { remove: curve, add: curve };
    });
  }

  /** The steps accounted so far. */
  get steps(): number {
    return this.#steps;
  }

  /** The smallest epsilon >= 0 for which the steps so far are (epsilon, delta)-DP; 0 before any step, Infinity when no epsilon reaches delta. */
  epsilon(delta: number): number {
    if (!(delta > 0 && delta < 1)) throw ftError("FT305", { option: "delta", why: `${delta} given; delta is in (0, 1)` });
    const composed = this.#compose();
    if (composed === undefined) return 0;
    return Math.max(epsilonForDelta(composed.remove, delta), epsilonForDelta(composed.add, delta));
  }

  /** The smallest delta for which the steps so far are (epsilon, delta)-DP. */
  delta(epsilon: number): number {
    if (!(epsilon >= 0)) throw ftError("FT305", { option: "epsilon", why: `${epsilon} given; epsilon is a number >= 0` });
    const composed = this.#compose();
    if (composed === undefined) return 0;
    return Math.max(deltaForEpsilon(composed.remove, epsilon), deltaForEpsilon(composed.add, epsilon));
  }

  #count(count: number): this {
    if (!(Number.isInteger(count) && count >= 0)) throw ftError("FT305", { option: "count", why: `${count} given; a count of steps is an integer >= 0` });
    this.#steps += count;
    return this;
  }

  #add(key: string, count: number, samplerTv: number, curves: Entry["curves"]): this {
    this.#count(count);
    if (count === 0) return this;
    const entry = this.#entries.get(key);
    if (entry === undefined) this.#entries.set(key, { curves, samplerTv, count });
    else entry.count += count;
    this.#composed = undefined;
    return this;
  }

  #stepPlds(key: string, entry: Entry): Record<Adjacency, Pld> {
    const cacheKey = `${key}:${this.interval}:${this.tail}`;
    let plds = stepCache.get(cacheKey);
    if (plds === undefined) {
      const curves = entry.curves();
      const remove = pldFromCurve(curves.remove, this.interval, entry.samplerTv);
      plds = { remove, add: curves.add === curves.remove ? remove : pldFromCurve(curves.add, this.interval, entry.samplerTv) };
      if (stepCache.size >= CACHE_SIZE) stepCache.delete(stepCache.keys().next().value!);
      stepCache.set(cacheKey, plds);
    }
    return plds;
  }

  #compose(): Record<Adjacency, Pld> | undefined {
    if (this.#composed !== undefined || this.#entries.size === 0) return this.#composed;
    let result: Record<Adjacency, Pld> | undefined;
    for (const [key, entry] of this.#entries) {
      const step = this.#stepPlds(key, entry);
      const remove = selfCompose(step.remove, entry.count, this.tail);
      const add = step.add === step.remove ? remove : selfCompose(step.add, entry.count, this.tail);
      if (result === undefined) result = { remove, add };
      else {
        const both = compose(result.remove, remove);
        result = { remove: both, add: result.add === result.remove && add === remove ? both : compose(result.add, add) };
      }
    }
    this.#composed = result;
    return result;
  }
}
