/**
 * secureMean: the mean over clients that the server computes from secureSums only
 * (docs/language.md "Secure aggregation"). It is secureSum followed by a division, so its
 * masks, keys (FT110, FT111), release listing in program.privacy and gradients are secureSum's.
 *
 * - Uniform (no `weights`): secureSum(x) / n, n the cohort's size. The server knows who
 *   reported, so n is no secret: it is counted with a plain sum of a constant 1 per client
 *   (the count is computed from no client's data, so it is free of the taint).
 * - Weighted (`weights`, a CLIENTS f32[] or i32[] scalar in [0, maxWeight], e.g. example
 *   counts): secureSum(w x) / secureSum(w), as secure FedAvg's example-weighted mean. Neither a
 *   client's value nor its weight is seen; both sums' masks derive from split(key, 2).
 *   w x is in [min(0, W low), max(0, W high)] for x in [low, high] and w in [0, W], which is
 *   the weighted sum's declared range; it is quantized with the same `scale` (steps per unit of
 *   w x), float32 weights too.
 */
import type { Message, Presumed, Validate } from "../../types/errors.js";
import type { ReduceCheck, Release } from "../../types/placement.js";
import type { AtClients, Tensor, TreeLike } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { requireDType } from "../ir/dtypes.js";
import { printType } from "../ir/print.js";
import * as constants from "./constants.js";
import * as elementwise from "./elementwise.js";
import * as placement from "./placement.js";
import { checkClientsArgument, flattenTracers } from "./placement.js";
import * as random from "./random.js";
import * as secure from "./secure.js";
import type { SecureSumOptions, ServerKey } from "./secure.js";
import * as tensorOps from "./tensor-ops.js";
import { isTracer, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";

/**
 * A weight per client: a CLIENTS scalar, f32[] or i32[]. Its placement and dtype are asked
 * first with FT312 among the types allowed, so that tsc's elaboration of a SERVER, local or bool
 * weight names the code and the rule, as tracing does.
 */
type WeightsMessage = Message<"FT312", { what: "weights"; why: "expected a CLIENTS scalar, f32[] or i32[]" }>;
type ClientWeight = { readonly placement: AtClients | WeightsMessage; readonly dtype: "float32" | "int32" | WeightsMessage } & (
  | Tensor<[], "float32", AtClients>
  | Tensor<[], "int32", AtClients>
);

/**
 * secureMean's options: secureSum's (the `scale` required), and optional per-client `weights` with
 * their bound `maxWeight`.
 *
 * @example
 * program({ u: atClients(f32([10]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
 *   secureMean(u, { bits: 20, key, range: [-1, 1], scale: 1000 }),
 * );
 */
export interface SecureMeanOptions<K = ServerKey> extends SecureSumOptions<K> {
  /** Quantization steps per unit (of x, or of w x when weighted): required, x is float32. */
  readonly scale: number;
  /** Each client's weight (a CLIENTS scalar, f32 or i32, in [0, maxWeight]); a uniform mean without it. */
  readonly weights?: ClientWeight;
  /** The largest weight W: the weights' declared range is [0, W]. Required with `weights`. */
  readonly maxWeight?: number;
}

// The operations through loose signatures: their checks run while tracing.
type Loose = (...args: unknown[]) => unknown;
const ops = { ...elementwise, ...tensorOps, ...random, ...placement, ...constants, ...secure } as unknown as Record<
  "mul" | "div" | "cast" | "split" | "map" | "reduceSum" | "ones" | "secureSum",
  Loose
>;

const bad = (what: string, why: string) => ftError("FT312", { what, why });

/**
 * The mean over the clients of every leaf of x ({T}@CLIENTS, float32) at the SERVER, from
 * secureSums: `secureMean(update, { bits: 20, key, range: [-1, 1], scale: 1000 })`, or
 * weighted, `{ ..., weights: count, maxWeight: 600 }`. Private data is accepted (secureSum
 * declassifies it: the exact mean, no DP).
 * @placement `{T}@CLIENTS` (private allowed: the exact mean is released) to `T@SERVER`; weights a
 * CLIENTS scalar; the key as secureSum's.
 * @example
 * program({ u: atClients(f32([10]), { private: true }), n: atClients(f32([])), key: atServer(i32([2])) }, ({ u, n, key }) =>
 *   secureMean(u, { bits: 24, key, range: [-1, 1], scale: 1000, weights: n, maxWeight: 600 }),
 * );
 */
export function secureMean<T extends TreeLike, K = ServerKey>(
  x: Validate<T, ReduceCheck<"secureMean", T, "float32">>,
  options: SecureMeanOptions<K>,
): Presumed<Release<T>> {
  const op = "secureMean";
  const { leaves, def, paths } = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, leaves, paths);
  for (const leaf of leaves) requireDType(op, leaf.dtype, "float32");
  if (leaves.length === 0) throw bad("argument", "an empty tree has no mean");
  if (typeof options !== "object" || options === null) throw bad("options", "expected { bits, key, range, scale, weights?, maxWeight? }");
  const { weights, maxWeight, ...sumOptions } = options;
  if (weights === undefined) {
    if (maxWeight !== undefined) throw bad("maxWeight", "is the weights' bound: give it with weights, or leave it out");
    const sums = flattenTracers(ops.secureSum(leaves, sumOptions), `${op}() sum`).leaves;
    const count = ops.reduceSum(ops.map(() => ops.ones([]), leaves[0]));
    return unflatten(
      def,
      sums.map((sum) => ops.div(sum, count)),
    ) as never;
  }
  const w = weights as unknown as Tracer;
  if (!isTracer(w) || w.shape.length !== 0 || (w.dtype !== "float32" && w.dtype !== "int32") || !w.placement.startsWith("clients")) {
    throw bad("weights", `expected a CLIENTS scalar, f32[] or i32[], got ${isTracer(w) ? printType(w.type) : "a value that is no tensor"}`);
  }
  const W = maxWeight ?? NaN;
  if (!(Number.isFinite(W) && W > 0) || (w.dtype === "int32" && !Number.isInteger(W))) {
    throw bad("maxWeight", `expected a finite number > 0 (a whole number for i32 weights), the weights' range being [0, maxWeight], got ${String(maxWeight)}`);
  }
  const { range } = options;
  if (!Array.isArray(range) || range.length !== 2 || !range.every(Number.isFinite) || !(range[0] <= range[1])) {
    throw bad("range", `expected [low, high] with finite low <= high, got ${JSON.stringify(range)}`);
  }
  const [sumKey, weightKey] = ops.split(options.key, 2) as Tracer[];
  const weighted = ops.map((wi: unknown, ...members: unknown[]) => members.map((m) => ops.mul(m, ops.cast(wi, "float32"))), w, ...leaves) as unknown[];
  const weightedRange = [Math.min(0, W * range[0]), Math.max(0, W * range[1])] as const;
  const sums = flattenTracers(ops.secureSum(weighted, { ...sumOptions, key: sumKey, range: weightedRange }), `${op}() sum`).leaves;
  const { scale, ...weightOptions } = sumOptions;
  const total = ops.secureSum(w, { ...weightOptions, ...(w.dtype === "float32" ? { scale } : {}), key: weightKey, range: [0, W] });
  const denominator = w.dtype === "float32" ? total : ops.cast(total, "float32");
  return unflatten(
    def,
    sums.map((sum) => ops.div(sum, denominator)),
  ) as never;
}
