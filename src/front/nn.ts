/**
 * Neural-network operations: softmax, convolution and pooling (NHWC), and the losses a
 * federated-learning user needs. Losses return one value per example (the batch dims), so
 * that padded batches can be masked before averaging.
 */
import type { Checked, Fail, FailWith, Failures, Presumed, Message, Outcome, Validate } from "../../types/errors.js";
import type { JoinPlacement, Tainted } from "../../types/placement.js";
import type { Binary, Ctx } from "../../types/ops.js";
import type { Print } from "../../types/print.js";
import type { Broadcast, DimsAgree, NormalizeAxis, WindowDim } from "../../types/shape.js";
import type { DType, DTypeOf, Dim, PlacementOf, Shape, ShapeOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import { broadcastShapes } from "../ir/shapes.js";
import { currentGraph, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";
import { emitBinary, softplusOf } from "./elementwise.js";
import { bernoulliMask, type KeyCheck } from "./random.js";
import type { ReductionFn } from "./tensor-ops.js";

type FloatCheck<Op extends string, X extends Tensor> = DTypeOf<X> extends "float32"
  ? never
  : DType extends DTypeOf<X>
    ? never
    : Message<"FT205", { op: Op; want: "f32"; got: DTypeOf<X> extends "int32" ? "i32" : "bool" }>;
type AxisCheck<Op extends string, X extends Tensor, Axis extends number> = NormalizeAxis<Axis, ShapeOf<X>["length"]> extends "fail"
  ? Message<"FT204", { op: Op; axis: Axis; a: Print<X>; rank: ShapeOf<X>["length"] }>
  : never;

function softmaxLike(op: string, primitive: string, x: unknown, axis: number): Tracer {
  return currentGraph(op).emit(primitive, [asTracer(x, op)], { axis }, op)[0]!;
}

/**
 * exp(x) / sum(exp(x)) along an axis (default the last).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ logits: atServer(f32(["B", 10])) }, ({ logits }) => softmax(logits)); // rows sum to 1
 */
export function softmax<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, FloatCheck<"softmax", X>>,
  axis?: Validate<Axis, AxisCheck<"softmax", X, Axis>>,
): Presumed<X> {
  return softmaxLike("softmax", "softmax", x, (axis as number | undefined) ?? -1) as never;
}

/**
 * log(softmax(x)), computed stably.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ logits: atServer(f32(["B", 10])) }, ({ logits }) => logSoftmax(logits, -1));
 */
export function logSoftmax<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, FloatCheck<"logSoftmax", X>>,
  axis?: Validate<Axis, AxisCheck<"logSoftmax", X, Axis>>,
): Presumed<X> {
  return softmaxLike("logSoftmax", "log_softmax", x, (axis as number | undefined) ?? -1) as never;
}

type LogSumExpAxes = number | readonly number[] | undefined;

/**
 * log(sum(exp(x))) over axes (all when omitted), computed stably: with m the maximum over the
 * same axes, m + log(sum(exp(x - m))), so no exp overflows and the largest term is exp(0) = 1.
 * m goes through stop_gradient: the value does not depend on it, and then the gradient is
 * exactly softmax over the axes (without it, ties in the max would add and cancel terms).
 * A composite of existing primitives, so every backend, batching and gradient come with them.
 * A slice whose entries are all -inf gives NaN (its shift is -inf - -inf).
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ logits: atServer(f32(["B", 10])) }, ({ logits }) => logsumexp(logits, -1)); // f32[B]@SERVER
 */
export const logsumexp: ReductionFn<"logsumexp", "float"> = ((x: unknown, axis?: LogSumExpAxes, keepDims?: boolean): Tracer => {
  const op = "logsumexp";
  const g = currentGraph(op);
  const xt = asTracer(x, op);
  const axes = axis === undefined ? null : typeof axis === "number" ? [axis] : [...axis];
  const max = g.emit("reduce_max", [xt], { axes, keepDims: true }, op)[0]!;
  const shift = g.emit("stop_gradient", [max], {}, op)[0]!;
  const terms = g.emit("exp", [emitBinary("sub", op, xt, shift)], {}, op)[0]!;
  const total = g.emit("reduce_sum", [terms], { axes, keepDims: keepDims ?? false }, op)[0]!;
  // Summing the unit dims of the kept max drops them exactly as the sum above did.
  const offset = keepDims === true ? shift : g.emit("reduce_sum", [shift], { axes, keepDims: false }, op)[0]!;
  return emitBinary("add", op, g.emit("log", [total], {}, op)[0]!, offset);
}) as never;

type NormOutcome<X extends Tensor, P extends Tensor> = Binary<"layerNorm", "float", X, P, Broadcast<ShapeOf<X>, ShapeOf<P>, Ctx<"layerNorm", X, P>>>;

/**
 * Layer normalization (Ba et al. 2016) over the last axis: (x - mean) / sqrt(var + eps),
 * then scaled by gamma and shifted by beta (both broadcast against x, usually of the last
 * dim's size), var being the biased variance, as in PyTorch's LayerNorm and flax's. A
 * composite of existing primitives: its gradient, batching and lowerings follow from theirs.
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ h: atServer(f32(["T", 64])), g: atServer(f32([64])), b: atServer(f32([64])) }, ({ h, g, b }) => layerNorm(h, g, b));
 */
export function layerNorm<X extends Tensor, G extends Tensor, B extends Tensor>(
  x: Validate<X, FloatCheck<"layerNorm", X>>,
  gamma: Checked<G, NormOutcome<X, G>>,
  beta: Checked<B, NormOutcome<X, B>>,
  eps = 1e-5,
): Outcome<Tainted<NormOutcome<X, G>, [X, G, B]>> {
  const op = "layerNorm";
  if (!(eps > 0 && Number.isFinite(eps))) throw ftError("FT302", { what: "layerNorm() eps", why: `${eps} is not a positive number` });
  const normalized = standardize(op, asTracer(x, op), [-1], eps);
  return emitBinary("add", op, emitBinary("mul", op, normalized, asTracer(gamma, op)), asTracer(beta, op)) as never;
}

/** (x - mean) / sqrt(var + eps) over axes, with the biased variance. */
function standardize(op: string, x: Tracer, axes: number[], eps: number): Tracer {
  if (!(eps > 0 && Number.isFinite(eps))) throw ftError("FT302", { what: `${op}() eps`, why: `${eps} is not a positive number` });
  const g = currentGraph(op);
  const meanOver = (t: Tracer) => g.emit("reduce_mean", [t], { axes, keepDims: true }, op)[0]!;
  const centered = emitBinary("sub", op, x, meanOver(x));
  const variance = meanOver(emitBinary("mul", op, centered, centered));
  return emitBinary("div", op, centered, g.emit("sqrt", [emitBinary("add", op, variance, eps)], {}, op)[0]!);
}

/**
 * Group normalization (Wu and He 2018) of channels-last x [N, ...spatial, C]: the C channels
 * split into `groups` groups of C/groups, each example's group normalized over its spatial
 * positions and channels together, then scaled and shifted per channel by gamma and beta.
 * groups = 1 is layer norm over everything but N; groups = C is instance norm. groups must
 * divide C (FT302). A composite, as layerNorm.
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32(["N", 8, 8, 32])), g: atServer(f32([32])), b: atServer(f32([32])) }, ({ x, g, b }) => groupNorm(x, g, b, 4));
 */
export function groupNorm<X extends Tensor, G extends Tensor, B extends Tensor>(
  x: Validate<X, FloatCheck<"groupNorm", X>>,
  gamma: Checked<G, NormOutcome<X, G>>,
  beta: Checked<B, NormOutcome<X, B>>,
  groups: number,
  eps = 1e-5,
): Outcome<Tainted<NormOutcome<X, G>, [X, G, B]>> {
  const op = "groupNorm";
  const xt = asTracer(x, op);
  const rank = xt.shape.length;
  const channels = xt.shape[rank - 1];
  if (rank < 2 || typeof channels !== "number") throw ftError("FT204", { op, axis: -1, a: printType(xt.type), rank });
  if (!Number.isInteger(groups) || groups < 1 || channels % groups !== 0) {
    throw ftError("FT302", { what: "groupNorm() groups", why: `${groups} does not divide the ${channels} channels of ${printType(xt.type)}` });
  }
  const g = currentGraph(op);
  const unknown = xt.shape.slice(0, -1).filter((d) => d === null).length;
  const outer = xt.shape.slice(0, -1).map((d) => (d === null && unknown === 1 ? -1 : d));
  const grouped = g.emit("reshape", [xt], { shape: [...outer, groups, channels / groups] }, op)[0]!;
  // Every axis but the examples' (0) and the group's (rank - 1 of the grouped shape).
  const axes = [...Array(rank + 1).keys()].filter((a) => a !== 0 && a !== rank - 1);
  const normalized = g.emit("reshape_like", [standardize(op, grouped, axes, eps), xt], {}, op)[0]!;
  return emitBinary("add", op, emitBinary("mul", op, normalized, asTracer(gamma, op)), asTracer(beta, op)) as never;
}

/** Drops the last dim: the per-example shape of a loss over class scores. */
type Batch<S extends Shape> = S extends readonly [...infer B extends Dim[], Dim] ? B : Dim[];
type LossOutcome<Op extends string, A extends Tensor, B extends Tensor> =
  Binary<Op, "float", A, B, Broadcast<ShapeOf<A>, ShapeOf<B>, Ctx<Op, A, B>>> extends infer R
    ? R extends Tensor
      ? Tensor<Batch<ShapeOf<R>>, "float32", PlacementOf<R>>
      : R
    : never;

/**
 * Per-example cross-entropy of softmax(logits) against label distributions (one-hot rows).
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 */
export function softmaxCrossEntropy<L extends Tensor, Y extends Tensor>(
  logits: L,
  labels: Checked<Y, LossOutcome<"softmaxCrossEntropy", L, Y>>,
): Outcome<LossOutcome<"softmaxCrossEntropy", L, Y>> {
  const op = "softmaxCrossEntropy";
  const g = currentGraph(op);
  const logp = g.emit("log_softmax", [asTracer(logits, op)], { axis: -1 }, op)[0]!;
  const prod = emitBinary("mul", op, asTracer(labels, op), logp);
  const total = g.emit("reduce_sum", [prod], { axes: [-1], keepDims: false }, op)[0]!;
  return g.emit("neg", [total], {}, op)[0] as never;
}

/**
 * The labels must broadcast with the logits' batch dims; a mismatch is reported in the shapes
 * the user wrote (`f32[B,10]` and `i32[N]`), not in those of the one-hot labels made inside.
 */
type SparseOutcome<L extends Tensor, Y extends Tensor> = DTypeOf<Y> extends "int32"
  ? Broadcast<Batch<ShapeOf<L>>, ShapeOf<Y>, Ctx<"sparseSoftmaxCrossEntropy", L, Y>> extends infer Labels
    ? Labels extends Fail
      ? Labels
      : LossOutcome<"sparseSoftmaxCrossEntropy", L, Tensor<[...ShapeOf<Y>, ShapeOf<L> extends readonly [...Dim[], infer K extends Dim] ? K : number], "float32", PlacementOf<Y>>>
    : never
  : FailWith<"FT205", { op: "sparseSoftmaxCrossEntropy"; want: "i32"; got: DTypeOf<Y> extends "float32" ? "f32" : "bool" }>;

/**
 * Per-example cross-entropy of softmax(logits) against int32 class labels.
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 */
export function sparseSoftmaxCrossEntropy<L extends Tensor, Y extends Tensor>(
  logits: L,
  labels: Checked<Y, SparseOutcome<L, Y>>,
): Outcome<SparseOutcome<L, Y>> {
  const op = "sparseSoftmaxCrossEntropy";
  const l = asTracer(logits, op);
  const y = asTracer(labels, op);
  const classes = l.shape[l.shape.length - 1];
  if (typeof classes !== "number") throw ftError("FT204", { op, axis: -1, a: printType(l.type), rank: l.shape.length });
  broadcastShapes(l.shape.slice(0, -1), y.shape, { op, a: printType(l.type), b: printType(y.type) });
  const g = currentGraph(op);
  const oneHotLabels = g.emit("one_hot", [y], { depth: classes }, op)[0]!;
  return softmaxCrossEntropy(l as never, oneHotLabels as never) as never;
}

/**
 * Per-example mean of squared differences over the last axis.
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ p: atServer(f32(["B", 1])), y: atServer(f32(["B", 1])) }, ({ p, y }) => mean(meanSquaredError(p, y)));
 */
export function meanSquaredError<P extends Tensor, Y extends Tensor>(
  predictions: P,
  targets: Checked<Y, LossOutcome<"meanSquaredError", P, Y>>,
): Outcome<LossOutcome<"meanSquaredError", P, Y>> {
  const op = "meanSquaredError";
  const diff = emitBinary("sub", op, asTracer(predictions, op), asTracer(targets, op));
  const sq = emitBinary("mul", op, diff, diff);
  return currentGraph(op).emit("reduce_mean", [sq], { axes: [-1], keepDims: false }, op)[0] as never;
}

/** The mean over the last axis of a per-entry loss: one value per example, as the losses above. */
const meanOverLast = (op: string, x: Tracer): Tracer => currentGraph(op).emit("reduce_mean", [x], { axes: [-1], keepDims: false }, op)[0]!;

/**
 * Per-example binary cross-entropy of sigmoid(logits) against labels in [0, 1] (independent
 * binary outputs, the last axis), from the logits: the mean over the last axis of
 * softplus(x) - x z, the numerically stable form of -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))
 * (TensorFlow's sigmoid_cross_entropy_with_logits). Its gradient is (sigmoid(x) - z) / n.
 * For one output per example give logits and labels a last axis of 1 ([B, 1]).
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 */
export function sigmoidCrossEntropy<L extends Tensor, Y extends Tensor>(
  logits: L,
  labels: Checked<Y, LossOutcome<"sigmoidCrossEntropy", L, Y>>,
): Outcome<LossOutcome<"sigmoidCrossEntropy", L, Y>> {
  const op = "sigmoidCrossEntropy";
  const x = asTracer(logits, op);
  const z = asTracer(labels, op);
  return meanOverLast(op, emitBinary("sub", op, softplusOf(op, x), emitBinary("mul", op, x, z))) as never;
}

/** The smallest probability binaryCrossEntropy takes the log of (Keras's epsilon): log(1e-7) = -16.1 bounds each term. */
const PROBABILITY_FLOOR = 1e-7;

/**
 * Per-example binary cross-entropy of probabilities p against labels z in [0, 1], the mean over
 * the last axis of -(z log p + (1 - z) log(1 - p)), p clipped to [1e-7, 1 - 1e-7] first (as
 * Keras does) so that a confident mistake costs 16.1, not infinity (and the gradient is 0
 * beyond the clip). From logits, sigmoidCrossEntropy is exact where this one clips: prefer it.
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ p: atServer(f32(["B", 1])), y: atServer(f32(["B", 1])) }, ({ p, y }) => mean(binaryCrossEntropy(p, y)));
 */
export function binaryCrossEntropy<P extends Tensor, Y extends Tensor>(
  probabilities: P,
  labels: Checked<Y, LossOutcome<"binaryCrossEntropy", P, Y>>,
): Outcome<LossOutcome<"binaryCrossEntropy", P, Y>> {
  const op = "binaryCrossEntropy";
  const g = currentGraph(op);
  const p = emitBinary("minimum", op, emitBinary("maximum", op, asTracer(probabilities, op), PROBABILITY_FLOOR), 1 - PROBABILITY_FLOOR);
  const z = asTracer(labels, op);
  const log = (t: Tracer) => g.emit("log", [t], {}, op)[0]!;
  const hits = emitBinary("mul", op, z, log(p));
  const misses = emitBinary("mul", op, emitBinary("sub", op, 1, z), log(emitBinary("sub", op, 1, p)));
  return meanOverLast(op, g.emit("neg", [emitBinary("add", op, hits, misses)], {}, op)[0]!) as never;
}

/**
 * conv2d's and maxPool2d's window options: the strides (one for both axes, or [rows, columns];
 * default 1 for conv2d, the window for maxPool2d) and the padding ("valid", the default, or
 * "same").
 *
 * @example
 * program({ x: atServer(f32(["N", 28, 28, 1])), k: atServer(f32([3, 3, 1, 8])) }, ({ x, k }) =>
 *   conv2d(x, k, { strides: 2, padding: "valid" } satisfies WindowOptions),
 * );
 */
export interface WindowOptions<Stride extends number = number> {
  readonly strides?: Stride | readonly [Stride, Stride];
  readonly padding?: "same" | "valid";
}
type StrideOf<O, Default = 1> = O extends { strides: infer S } ? (S extends readonly [infer A, unknown] ? A : S) : Default;
type PaddingOf<O> = O extends { padding: infer P } ? P : "same";

type ConvShape<X extends Shape, F extends Shape, O> = X extends readonly [infer N, infer H, infer W, Dim]
  ? F extends readonly [infer KH, infer KW, Dim, infer C]
    ? [N, WindowDim<H, KH, StrideOf<O>, PaddingOf<O>>, WindowDim<W, KW, StrideOf<O>, PaddingOf<O>>, C]
    : Dim[]
  : Dim[];
type ConvOutcome<X extends Tensor, F extends Tensor, O> =
  ShapeOf<X> extends readonly [Dim, Dim, Dim, infer CX]
    ? ShapeOf<F> extends readonly [Dim, Dim, infer CF, Dim]
      ? DimsAgree<CX, CF> extends true
        ? Binary<"conv2d", "float", X, F, ConvShape<ShapeOf<X>, ShapeOf<F>, O>>
        : FailWith<"FT202", { op: "conv2d"; a: Print<X>; b: Print<F>; ka: `${CX & (string | number)}`; kb: `${CF & (string | number)}` }>
      : Binary<"conv2d", "float", X, F, Dim[]>
    : Binary<"conv2d", "float", X, F, Dim[]>;

function windowAttrs(options: WindowOptions | undefined): { strides: number[]; padding: "same" | "valid" } {
  const s = options?.strides ?? 1;
  const strides = typeof s === "number" ? [s, s] : [...s];
  const padding = options?.padding ?? "same";
  if (padding !== "same" && padding !== "valid") throw ftError("FT305", { option: "padding", why: `must be "same" or "valid", got ${String(padding)}` });
  if (strides.some((v) => !Number.isInteger(v) || v < 1)) throw ftError("FT305", { option: "strides", why: `must be positive integers, got ${strides.join(",")}` });
  return { strides, padding };
}

/**
 * 2-D convolution, NHWC input `[N,H,W,C]` and filter `[kh,kw,C,F]`.
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ x: atServer(f32(["N", 28, 28, 1])), k: atServer(f32([5, 5, 1, 32])) }, ({ x, k }) => conv2d(x, k, { padding: "same" })); // f32[N,28,28,32]
 */
export function conv2d<X extends Tensor, F extends Tensor, const O extends WindowOptions = {}>(
  x: X,
  filter: Checked<F, ConvOutcome<X, F, O>>,
  options?: O,
): Outcome<ConvOutcome<X, F, O>> {
  const op = "conv2d";
  return currentGraph(op).emit("conv2d", [asTracer(x, op), asTracer(filter, op)], windowAttrs(options), op)[0] as never;
}

type PoolShape<X extends Shape, Win extends number, O> = X extends readonly [infer N, infer H, infer W, infer C]
  ? [N, WindowDim<H, Win, StrideOf<O, Win>, PaddingOf<O>>, WindowDim<W, Win, StrideOf<O, Win>, PaddingOf<O>>, C]
  : Dim[];

/**
 * Max pooling over square windows, NHWC; strides default to the window, also when options give only the padding.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atServer(f32(["N", 28, 28, 32])) }, ({ x }) => maxPool2d(x, 2)); // f32[N,14,14,32]
 */
export function maxPool2d<X extends Tensor, const Win extends number, const O extends WindowOptions = { strides: Win }>(
  x: Validate<X, FloatCheck<"maxPool2d", X>>,
  window: Win,
  options?: O,
): Presumed<Tensor<PoolShape<ShapeOf<X>, Win, O>, "float32", PlacementOf<X>>> {
  const op = "maxPool2d";
  const attrs = windowAttrs({ strides: window, ...options });
  return currentGraph(op).emit("max_pool", [asTracer(x, op)], { window: [window, window], ...attrs }, op)[0] as never;
}

/** FT104/FT102/FT105/FT106 where the mask (bool, x's shape, at the key's placement) cannot meet x, as tracing reports it. */
type MaskCheck<X extends Tensor, K> = K extends Tensor ? Failures<JoinPlacement<"dropout", Tensor<ShapeOf<X>, "bool", PlacementOf<K>>, X>> : never;

/**
 * Inverted dropout: each entry of x kept with probability 1 - rate and scaled by
 * 1 / (1 - rate), else 0, so the expected value is x (evaluation then uses x unchanged).
 * The mask is a draw from key (src/front/random.ts): inside map() the key must differ per
 * client (foldIn(key, clientIndex())), and gradients flow through the kept entries only.
 * @placement x and the key at one placement, or the key local: `x@P` to `@P`; inside map, foldIn
 * the key with clientIndex() first (FT317).
 */
export function dropout<X extends Tensor, K extends Tensor>(
  x: Validate<X, FloatCheck<"dropout", X>>,
  rate: number,
  key: Validate<K, KeyCheck<"dropout", K> | MaskCheck<X, K>>,
): Presumed<Tainted<X, [K]>> {
  const op = "dropout";
  if (!(rate >= 0 && rate < 1)) throw ftError("FT302", { what: "dropout() rate", why: `${rate} is not in [0, 1)` });
  const xt = asTracer(x, op);
  if (xt.dtype !== "float32") throw ftError("FT205", { op, want: "f32", got: printType(xt.type) });
  if (rate === 0) return xt as never;
  const keep = bernoulliMask(op, key, 1 - rate, xt.shape as Dim[]);
  const zeros = currentGraph(op).emit("broadcast_like", [asTracer(0, op), xt], {}, op)[0]!;
  return currentGraph(op).emit("where", [keep, emitBinary("mul", op, xt, 1 / (1 - rate)), zeros], {}, op)[0] as never;
}
