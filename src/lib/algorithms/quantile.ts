/**
 * A differentially private quantile of one scalar per client, released to the SERVER
 * (docs/algorithms.md "DP quantiles"): binary search over [lower, upper] with noisy counts.
 *
 * Each of `steps` steps asks, at the midpoint m of the current interval, for
 * sum over clients of (1[x <= m] - p), by dpSum with clip max(p, 1 - p) (a client moves it by at
 * most that much) and noise multiplier z; the quantile p is where that sum crosses 0, so the
 * search keeps the half on the side its noisy sign points to. Needing no count of clients, it
 * releases nothing but the `steps` Gaussian sums: their cost is dpSum's, listed in
 * program.privacy and priced by programEpsilon (together, one Gaussian mechanism of noise
 * multiplier z / sqrt(steps) a run). The answer is within (upper - lower) / 2^(steps+1) of where
 * the noisy search ends; with n clients, a step errs only where fewer than about 2 z max(p, 1-p)
 * clients lie between m and the true quantile.
 *
 * The geometric update of Andrew et al. 2021 ("Differentially Private Learning with Adaptive
 * Clipping") tracks a quantile across rounds with one noisy count each, which adaptive clipping
 * uses (--dp-clip adaptive); this one answers within one run of a program.
 */
import type { Presumed, Validate } from "../../../types/errors.js";
import type { ReduceCheck, Release } from "../../../types/placement.js";
import type { DType, Placement, Tensor } from "../../../types/tensor.js";
import { ftError } from "../../errors/error.js";
import { requireDType } from "../../ir/dtypes.js";
import { checkClientsArgument, flattenTracers } from "../../front/placement.js";
import { dpSum } from "../../front/privacy.js";
import { split } from "../../front/random.js";
import { ops, type Value } from "./loose.js";

/**
 * dpQuantile's options: the quantile p, the interval searched, the noise multiplier of each
 * step's noisy count, the steps of the binary search and the key its noise is drawn from.
 *
 * @example
 * const median = dpQuantile(norms, { quantile: 0.5, lower: 0, upper: 10, noiseMultiplier: 1, key });
 */
export interface DpQuantileOptions {
  /** p in (0, 1): 0.5 is the median. */
  readonly quantile: number;
  /** The interval searched: the answer is clamped to it. */
  readonly lower: number;
  readonly upper: number;
  /** z of each step's noisy count. */
  readonly noiseMultiplier: number;
  /** The SERVER key the steps' noise comes from (split into one key a step: it feeds no other release). */
  readonly key: Tensor<[2], "int32", "server">;
  /** Halvings of [lower, upper]: 12 by default (each one more release). */
  readonly steps?: number;
}

const invalid = (option: string, why: string) => ftError("FT305", { option: `dpQuantile ${option}`, why });

/** A scalar at any placement: ReduceCheck names a misplaced one (FT103) as dpSum's does. */
type Scalar = Tensor<[], DType, Placement>;

/**
 * The p-quantile of the clients' scalars, differentially private: `{f32[]}@CLIENTS` (private or
 * not) to `f32[]@SERVER`, released as dpSum releases (FT103 for a value not at the CLIENTS,
 * FT205 for another dtype). Inside a program's body.
 *
 * @example
 * import { atClients, atServer, f32, i32, program } from "fedtensor";
 * import { dpQuantile } from "fedtensor/lib";
 * const p90 = program({ norms: atClients(f32([]), { private: true }), key: atServer(i32([2])) }, ({ norms, key }) =>
 *   dpQuantile(norms, { quantile: 0.9, lower: 0, upper: 10, noiseMultiplier: 1, key }),
 * );
 * console.log(p90.privacy); // its releases: the binary search's 12 noisy counts
 */
export function dpQuantile<T extends Scalar>(x: Validate<T, ReduceCheck<"dpQuantile", T, "float32">>, options: DpQuantileOptions): Presumed<Release<T>> {
  const { quantile: p, lower, upper, noiseMultiplier, key, steps = 12 } = options;
  if (!(p > 0 && p < 1)) throw invalid("quantile", `${p} given; a quantile is in (0, 1)`);
  if (!(Number.isFinite(lower) && Number.isFinite(upper) && lower < upper)) throw invalid("lower, upper", `[${lower}, ${upper}] given; finite numbers with lower < upper`);
  if (!(noiseMultiplier > 0 && Number.isFinite(noiseMultiplier))) throw invalid("noiseMultiplier", `${noiseMultiplier} given; a finite number > 0`);
  if (!(Number.isInteger(steps) && steps >= 1 && steps <= 64)) throw invalid("steps", `${steps} given; a whole number from 1 to 64`);
  // The checks tsc makes, again while tracing (plain JavaScript callers): one f32[] at the CLIENTS.
  const { leaves, paths } = flattenTracers(x, "dpQuantile() argument");
  checkClientsArgument("dpQuantile", leaves, paths);
  if (leaves.length !== 1 || leaves[0]!.shape.length !== 0) throw ftError("FT302", { what: "dpQuantile() argument", why: "one scalar (f32[]) per client" });
  requireDType("dpQuantile", leaves[0]!.dtype, "float32");
  const clip = Math.max(p, 1 - p);
  // The interval's ends: numbers until the first noisy count makes them SERVER values.
  let lo: Value = lower;
  let hi: Value = upper;
  const keys: Value[] = steps === 1 ? [key] : (split as (key: Value, n: number) => Value[])(key, steps);
  for (let step = 0; step < steps; step++) {
    const mid: Value = typeof lo === "number" && typeof hi === "number" ? (lo + hi) / 2 : ops.div(ops.add(lo, hi), 2);
    const centred =
      typeof mid === "number"
        ? ops.map((v: Value) => ops.sub(ops.cast(ops.lessEqual(v, mid), "float32"), p), x)
        : ops.map((v: Value, m: Value) => ops.sub(ops.cast(ops.lessEqual(v, m), "float32"), p), x, ops.broadcast(mid));
    const count = (dpSum as (x: Value, options: Value) => Value)(centred, { clip, noiseMultiplier, key: keys[step] });
    // 1 where at least a p share of the clients are at or below mid: the quantile is in [lo, mid].
    const left = ops.cast(ops.greaterEqual(count, 0), "float32");
    const right = ops.sub(1, left);
    hi = ops.add(ops.mul(left, mid), ops.mul(right, hi));
    lo = ops.add(ops.mul(left, lo), ops.mul(right, mid));
  }
  return ops.div(ops.add(lo, hi), 2);
}

/** The median: dpQuantile with quantile 0.5. */
export function dpMedian<T extends Scalar>(x: Validate<T, ReduceCheck<"dpMedian", T, "float32">>, options: Omit<DpQuantileOptions, "quantile">): Presumed<Release<T>> {
  return (dpQuantile as (x: Value, options: DpQuantileOptions) => never)(x, { ...options, quantile: 0.5 });
}
