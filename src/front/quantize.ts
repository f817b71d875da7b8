/**
 * Stochastic quantization of a client's update to b bits per coordinate (QSGD, Alistarh et
 * al. 2017; the stochastic k-level quantization of Suresh et al. 2017): per leaf, with
 * lo = min and hi = max of its entries and s = 2^b - 1 levels above lo, each entry x becomes
 * lo + q (hi - lo) / s with q = floor((x - lo) s / (hi - lo) + u), u uniform in [0, 1) from
 * the key. q is the level below x with probability one minus x's distance above it, so
 * E[q] = (x - lo) s / (hi - lo): the quantized value is unbiased. A client sends b bits per
 * entry and two float32 numbers (lo, hi) per leaf instead of 32 bits per entry.
 *
 * Gradients pass straight through (the quantized value minus x is a constant), as usual for
 * quantization-aware training.
 */
import type { Failures, Presumed, Validate } from "../../types/errors.js";
import type { FloatTreeCheck } from "../../types/ops.js";
import type { JoinPlacement, Tainted } from "../../types/placement.js";
import type { Leaves, PlacementOf, ShapeOf, Tensor, TreeLike, Typed } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { requireDType } from "../ir/dtypes.js";
import { emitBinary } from "./elementwise.js";
import { flattenTracers } from "./placement.js";
import { split, uniform, type KeyCheck } from "./random.js";
import { currentGraph, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";

/**
 * stochasticQuantize()'s options: the bits per entry.
 *
 * @example
 * const options: QuantizeOptions = { bits: 4 }; // 16 levels between each leaf's min and max
 */
export interface QuantizeOptions {
  /** Bits per coordinate, 1 to 16. */
  readonly bits: number;
}

/**
 * The bits a tree of leaves with these sizes takes quantized to `bits` per entry: b n per leaf plus its two float32 bounds.
 *
 * @placement none: a host function on sizes.
 * @example
 * quantizedBits([7840, 10], 8); // 8 * 7850 + 2 * 2 * 32 bits
 */
export function quantizedBits(leafSizes: readonly number[], bits: number): number {
  return leafSizes.reduce((total, n) => total + n * bits + 64, 0);
}

/**
 * FT104/FT102/FT105/FT106 where the key's draws (of each leaf's shape, at the key's placement)
 * cannot meet the leaf, as tracing reports it: the key joins every leaf of the result.
 */
type KeyJoinCheck<T, K> = Leaves<T> extends infer L
  ? L extends Typed
    ? Failures<JoinPlacement<"stochasticQuantize", L, Tensor<ShapeOf<L>, "float32", PlacementOf<K>>>>
    : never
  : never;

/**
 * x quantized to options.bits bits per entry with unbiased stochastic rounding drawn from key (one subkey per leaf).
 *
 * @placement x's placement (usually CLIENTS members inside map, with a per-client key): `x@P` to
 * `@P`.
 * @example
 * program({ u: atClients(f32([10])), key: atServer(i32([2])) }, ({ u, key }) =>
 *   reduceMean(map((um, k) => stochasticQuantize(um, foldIn(k, clientIndex()), { bits: 8 }), u, broadcast(key))),
 * );
 */
export function stochasticQuantize<T extends TreeLike, K extends Tensor>(
  x: Validate<T, FloatTreeCheck<"stochasticQuantize", T>>,
  key: Validate<K, [KeyCheck<"stochasticQuantize", K>] extends [never] ? KeyJoinCheck<T, K> : KeyCheck<"stochasticQuantize", K>>,
  options: QuantizeOptions,
): Presumed<Tainted<T, [K]>> {
  const op = "stochasticQuantize";
  const b = (options as QuantizeOptions | undefined)?.bits;
  if (typeof b !== "number" || !Number.isInteger(b) || b < 1 || b > 16) {
    throw ftError("FT302", { what: `${op}() bits`, why: `the bits per coordinate must be a whole number from 1 to 16, got ${String(b)}` });
  }
  const graph = currentGraph(op);
  const emit = (primitive: string, inputs: Tracer[], attrs = {}) => graph.emit(primitive, inputs, attrs, op)[0]!;
  const { leaves, def } = flattenTracers(x, `${op}() argument`);
  const keys = (leaves.length === 1 ? [key] : split(key as never, leaves.length)) as unknown as Tracer[];
  const levels = 2 ** b - 1;
  const quantized = leaves.map((leaf, i) => {
    requireDType(op, leaf.dtype, "float32");
    const all = { axes: null, keepDims: false };
    const lo = emit("reduce_min", [leaf], all);
    const span = emitBinary("sub", op, emit("reduce_max", [leaf], all), lo);
    // A constant leaf (span 0) keeps its value: its levels are all lo.
    const step = emitBinary("div", op, emitBinary("maximum", op, span, 1e-30), levels);
    const u = uniform(keys[i] as never, leaf.shape as never) as unknown as Tracer;
    const scaled = emitBinary("add", op, emitBinary("div", op, emitBinary("sub", op, leaf, lo), step), u);
    // scaled >= 0, so the cast's truncation is the floor.
    const q = emit("cast", [emit("cast", [scaled], { dtype: "int32" })], { dtype: "float32" });
    const value = emitBinary("add", op, lo, emitBinary("mul", op, emitBinary("minimum", op, q, levels), step));
    return emitBinary("add", op, leaf, emit("stop_gradient", [emitBinary("sub", op, value, leaf)]));
  });
  return unflatten(def, quantized) as never;
}
