/**
 * A stateful RDP accountant (docs/language.md "Privacy", "Accounting"): a training loop calls
 * `step(q, z)` after each release of the sampled Gaussian mechanism (a DP round of dpSum or
 * dpMean over a cohort sampled with rate q, noise multiplier z) and asks `epsilon(delta)` at
 * any time. Rates and noise may change from step to step: RDP at each order adds up over
 * steps (Mironov 2017, Proposition 1), so the accountant keeps one running total per order,
 * computed by the functions of ./rdp.ts, as TF Privacy's RdpAccountant and Opacus's
 * RDPAccountant do.
 *
 * It depends on ./rdp.ts and the error catalogue only (no runtime), so the language's main
 * entry (src/index.ts) exports it without depending on the library's other layers.
 */
import { ftError } from "../../errors/error.js";
import { computeRdp, DEFAULT_RDP_ORDERS, rdpToEpsilon, type PrivacySpent, type RdpConversion } from "./rdp.js";

/**
 * RdpAccountant's options: the RDP orders kept and the RDP-to-(epsilon, delta) conversion.
 *
 * @example
 * const accountant = new RdpAccountant({ conversion: "classic" } satisfies RdpAccountantOptions);
 */
export interface RdpAccountantOptions {
  /** The RDP orders (each > 1) the curve is kept at; TF Privacy's and Opacus's defaults when absent. */
  readonly orders?: readonly number[];
  /** How RDP converts to (epsilon, delta): Balle et al. 2020 (default) or Mironov 2017's "classic". */
  readonly conversion?: RdpConversion;
}

/**
 * A Renyi-DP accountant for the sampled Gaussian mechanism (TF Privacy's and Opacus's method):
 * `step(q, z, count)` accounts rounds, `spent(delta)` gives the smallest epsilon over its orders.
 * A cross-check of PldAccountant, which is tighter.
 */
export class RdpAccountant {
  readonly orders: readonly number[];
  readonly conversion: RdpConversion;
  readonly #rdp: number[];
  #steps = 0;

  constructor(options: RdpAccountantOptions = {}) {
    const orders = options.orders ?? DEFAULT_RDP_ORDERS;
    if (!Array.isArray(orders) || orders.length === 0) throw ftError("FT305", { option: "orders", why: "give at least one RDP order (> 1)" });
    // computeRdp checks each order (> 1); a step of rate 0 costs nothing and checks them here.
    this.#rdp = computeRdp({ samplingRate: 0, noiseMultiplier: 1, steps: 0 }, orders);
    this.orders = Object.freeze([...orders]);
    const conversion = options.conversion ?? "balle2020";
    if (conversion !== "balle2020" && conversion !== "classic") throw ftError("FT305", { option: "conversion", why: `${String(conversion)} given; "balle2020" or "classic"` });
    this.conversion = conversion;
  }

  /**
   * Accounts `count` steps (rounds) of the sampled Gaussian mechanism with sampling rate q and
   * noise multiplier z (FT305 for q outside [0, 1], z < 0 or not finite, count not a whole
   * number >= 0). Returns the accountant, so that calls chain.
   */
  step(samplingRate: number, noiseMultiplier: number, count = 1): this {
    const added = computeRdp({ samplingRate, noiseMultiplier, steps: count }, this.orders);
    added.forEach((r, i) => {
      this.#rdp[i]! += r;
    });
    this.#steps += count;
    return this;
  }

  /** The steps accounted so far. */
  get steps(): number {
    return this.#steps;
  }

  /** The RDP spent so far at each of `orders` (a copy). */
  rdp(): number[] {
    return [...this.#rdp];
  }

  /**
   * The smallest epsilon for which the steps so far are (epsilon, delta)-DP, with the order that
   * gives it. Nothing spent yet (no step, or only steps of rate 0) is epsilon 0: the conversions
   * would give a small positive bound for an RDP curve of zeros, which no release justifies.
   */
  spent(delta: number): PrivacySpent {
    const spent = rdpToEpsilon(this.orders, this.#rdp, delta, this.conversion);
    return this.#rdp.every((r) => r === 0) ? { epsilon: 0, order: spent.order } : spent;
  }

  /** The epsilon of `spent(delta)`. */
  epsilon(delta: number): number {
    return this.spent(delta).epsilon;
  }
}
