/**
 * Clients that drop out of a round, as in Flower's simulations: each sampled client fails to
 * report (a lost connection, a straggler past the round's deadline) with probability `rate`,
 * independently and reproducibly from the round's random stream. A dropped client contributes
 * nothing to that round: no update, no weight, no change of its own state.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";

export interface CohortDropout {
  /** The clients that report, ascending. */
  readonly survivors: Int32Array;
  /** The clients that dropped, ascending. */
  readonly dropped: Int32Array;
}

/** Splits a sampled cohort into survivors and dropped clients; `rate` 0 drops no one and draws nothing. */
export function dropClients(cohort: Int32Array, rate: number, rng: Rng): CohortDropout {
  if (!(rate >= 0 && rate < 1)) throw ftError("FT305", { option: "dropout", why: `expected a probability 0 <= p < 1, got ${rate}` });
  if (rate === 0) return { survivors: cohort, dropped: new Int32Array(0) };
  // One draw per cohort position, so a client's fate does not depend on the others'.
  const drops = Array.from(cohort, () => rng.float() < rate);
  return { survivors: cohort.filter((_, i) => !drops[i]), dropped: cohort.filter((_, i) => drops[i]) };
}
