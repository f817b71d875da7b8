/**
 * Tensor operations beyond the elementwise ones: linear algebra, shapes, reductions over
 * axes, dtype conversion and selection. They compute at the placement of their operands.
 * Every check of SPEC section 4 is in the parameter types (tsc) and in the primitive rules
 * (tracing), with the same codes and texts.
 */
import type { Checked, Fail, FailWith, Presumed, Message, Outcome, Validate } from "../../types/errors.js";
import type { JoinPlacement } from "../../types/placement.js";
import type { AsTensor, Binary, Ctx, Many, RequireDType, ShapeOp, ShapesOf } from "../../types/ops.js";
import type { Reshape } from "../../types/reshape.js";
import type { Broadcast, Concat, ExpandDims, MatMul, Reduce, Slice, Stack, Transpose } from "../../types/shape.js";
import type { DType, DTypeOf, Dim, Placement, PlacementOf, ShapeOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { requireDType } from "../ir/dtypes.js";
import { printType } from "../ir/print.js";
import * as shapes from "../ir/shapes.js";
import { emitBinary } from "./elementwise.js";
import { currentGraph, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";

type Mutable<S> = { -readonly [K in keyof S]: S[K] };
type Axes = number | readonly number[] | undefined;

const graph = (op: string) => currentGraph(op);
const tracer = (x: unknown, op: string): Tracer => asTracer(x, op);

/**
 * numpy matmul: `[...batch, n, k] @ [...batch, k, m]`; rank-1 operands are vectors.
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 */
export function matmul<A extends Tensor, B extends Tensor>(
  a: A,
  b: Checked<B, Binary<"matmul", "numeric", A, B, MatMul<ShapeOf<A>, ShapeOf<B>, Ctx<"matmul", A, B>>>>,
): Outcome<Binary<"matmul", "numeric", A, B, MatMul<ShapeOf<A>, ShapeOf<B>, Ctx<"matmul", A, B>>>> {
  return graph("matmul").emit("matmul", [tracer(a, "matmul"), tracer(b, "matmul")], {}, "matmul")[0] as never;
}

/**
 * Permutes axes; without perm, reverses them.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function transpose<X extends Tensor, const Perm extends readonly number[] | undefined = undefined>(
  x: X,
  perm?: Checked<Perm, Transpose<ShapeOf<X>, Perm, Ctx<"transpose", X>>>,
): Outcome<ShapeOp<Mutable<Transpose<ShapeOf<X>, Perm, Ctx<"transpose", X>>>, DTypeOf<X>, PlacementOf<X>>> {
  const attrs = { perm: perm === undefined ? null : [...(perm as readonly number[])] };
  return graph("transpose").emit("transpose", [tracer(x, "transpose")], attrs, "transpose")[0] as never;
}

/**
 * Same elements, new shape: dims may be sizes, names, or one -1 for the rest.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atClients(f32([28, 28])) }, ({ x }) => map((xm) => reshape(xm, [784]), x));
 */
export function reshape<X extends Tensor, const S extends readonly Dim[]>(
  x: X,
  shape: Checked<S, Reshape<ShapeOf<X>, Mutable<S>, Ctx<"reshape", X, Mutable<S>>>>,
): Outcome<ShapeOp<Reshape<ShapeOf<X>, Mutable<S>, Ctx<"reshape", X, Mutable<S>>>, DTypeOf<X>, PlacementOf<X>>> {
  const target = [...(shape as readonly Dim[])];
  if (target.filter((d) => d === -1).length > 1) {
    throw ftError("FT203", { a: printType(tracer(x, "reshape").type), b: `[${target.join(",")}]`, na: "?", nb: "two -1 dims" });
  }
  return graph("reshape").emit("reshape", [tracer(x, "reshape")], { shape: target }, "reshape")[0] as never;
}

/**
 * Inserts a unit dim at axis (in [-(rank+1), rank]).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function expandDims<X extends Tensor, const Axis extends number>(
  x: X,
  axis: Checked<Axis, ExpandDims<ShapeOf<X>, Axis, Ctx<"expandDims", X>>>,
): Outcome<ShapeOp<ExpandDims<ShapeOf<X>, Axis, Ctx<"expandDims", X>>, DTypeOf<X>, PlacementOf<X>>> {
  return graph("expandDims").emit("expand_dims", [tracer(x, "expandDims")], { axis: axis as number }, "expandDims")[0] as never;
}

/**
 * Joins tensors along an existing axis.
 *
 * @placement the tensors at one placement P, or local: result at P; SERVER with CLIENTS is FT104.
 * @example
 * program({ a: atServer(f32([2, 3])), b: atServer(f32([4, 3])) }, ({ a, b }) => concat([a, b], 0)); // f32[6,3]@SERVER
 */
export function concat<const Xs extends readonly Tensor[], const Axis extends number = 0>(
  xs: Checked<Xs, Many<"concat", Xs, Concat<ShapesOf<Xs>, Axis, Ctx<"concat", Xs[0]>>>>,
  axis?: Axis,
): Outcome<Many<"concat", Xs, Concat<ShapesOf<Xs>, Axis, Ctx<"concat", Xs[0]>>>> {
  const ts = (xs as readonly unknown[]).map((x) => tracer(x, "concat"));
  return graph("concat").emit("concat", ts, { axis: axis ?? 0 }, "concat")[0] as never;
}

/**
 * Stacks equal-shaped tensors along a new axis.
 *
 * @placement the tensors at one placement P, or local: result at P; SERVER with CLIENTS is FT104.
 * @example
 * program({ a: atServer(f32([3])), b: atServer(f32([3])) }, ({ a, b }) => stack([a, b], 0)); // f32[2,3]@SERVER
 */
export function stack<const Xs extends readonly Tensor[], const Axis extends number = 0>(
  xs: Checked<Xs, Many<"stack", Xs, Stack<ShapesOf<Xs>, Axis, Ctx<"stack", Xs[0]>>>>,
  axis?: Axis,
): Outcome<Many<"stack", Xs, Stack<ShapesOf<Xs>, Axis, Ctx<"stack", Xs[0]>>>> {
  const op = "stack";
  const ts = (xs as readonly unknown[]).map((x) => tracer(x, op));
  const at = axis ?? 0;
  // Checked as a stack first, so that a failure names stack() rather than its parts.
  const stacked = shapes.stackShape(ts.map((t) => t.shape), at, op, printType(ts[0]!.type));
  const newAxis = at < 0 ? at + stacked.length : at;
  const expanded = ts.map((t) => graph(op).emit("expand_dims", [t], { axis: newAxis }, op)[0]!);
  return graph(op).emit("concat", expanded, { axis: newAxis }, op)[0] as never;
}

/**
 * A block of x: `begin` and `size` per axis; size -1 takes the rest of the axis.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atServer(f32([10, 4])) }, ({ x }) => slice(x, [2, 0], [3, -1])); // f32[3,4]@SERVER: rows 2 to 4
 */
export function slice<X extends Tensor, const Begin extends readonly number[], const Size extends readonly number[]>(
  x: X,
  begin: Begin,
  size: Checked<Size, Slice<ShapeOf<X>, Begin, Size, Ctx<"slice", X>>>,
): Outcome<ShapeOp<Slice<ShapeOf<X>, Begin, Size, Ctx<"slice", X>>, DTypeOf<X>, PlacementOf<X>>> {
  const attrs = { begin: [...begin], size: [...(size as readonly number[])] };
  return graph("slice").emit("slice", [tracer(x, "slice")], attrs, "slice")[0] as never;
}

/**
 * One-hot vectors of length depth for int32 indices: `i32[...S]` to `f32[...S, depth]`.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function oneHot<X extends Tensor, const Depth extends number>(
  indices: Checked<X, RequireDType<"oneHot", X, "int32">>,
  depth: Depth,
): Outcome<RequireDType<"oneHot", X, "int32">> extends never ? never : Tensor<[...ShapeOf<X>, Depth], "float32", PlacementOf<X>> {
  return graph("oneHot").emit("one_hot", [tracer(indices, "oneHot")], { depth }, "oneHot")[0] as never;
}

type ReduceOutcome<Op extends string, X extends Tensor, Axis, K extends boolean, D extends DType> = ShapeOp<
  Reduce<ShapeOf<X>, Axis, K, Ctx<Op, X>>,
  D,
  PlacementOf<X>
>;
type NumericCheck<Op extends string, X extends Tensor> = DTypeOf<X> extends "bool"
  ? Message<"FT205", { op: Op; want: "f32 or i32"; got: "bool" }>
  : never;
type FloatCheck<Op extends string, X extends Tensor> = DTypeOf<X> extends "float32"
  ? never
  : DType extends DTypeOf<X>
    ? never
    : Message<"FT205", { op: Op; want: "f32"; got: DTypeOf<X> extends "int32" ? "i32" : "bool" }>;

function reduceAxes(op: string, primitive: string, x: unknown, axis: Axes, keepDims: boolean | undefined): Tracer {
  const attrs = { axes: axis === undefined ? null : typeof axis === "number" ? [axis] : [...axis], keepDims: keepDims ?? false };
  return graph(op).emit(primitive, [tracer(x, op)], attrs, op)[0]!;
}

type ClassCheck<Op extends string, Class extends "numeric" | "float", X extends Tensor> = Class extends "float" ? FloatCheck<Op, X> : NumericCheck<Op, X>;

/** A reduction over axes (all when omitted), keeping them as unit dims with keepDims. */
export type ReductionFn<Op extends string, Class extends "numeric" | "float"> = <
  X extends Tensor,
  const Axis extends Axes = undefined,
  K extends boolean = false,
>(
  x: Validate<X, ClassCheck<Op, Class, X>>,
  axis?: Checked<Axis, Reduce<ShapeOf<X>, Axis, K, Ctx<Op, X>>>,
  keepDims?: K,
  // A float reduction's result is f32, also presumed so when its operand failed FT205, so that
  // the next operation reports nothing more.
) => Outcome<ReduceOutcome<Op, X, Axis, K, Class extends "float" ? "float32" : DTypeOf<X>>>;

/** A reduction; Class is its dtype class for the types, the primitive table applies the same at run time. */
function reduction<Op extends string, Class extends "numeric" | "float">(op: Op, primitive: string): ReductionFn<Op, Class> {
  return ((x: unknown, axis?: Axes, keepDims?: boolean) => reduceAxes(op, primitive, x, axis, keepDims)) as never;
}

/**
 * Sum over axes (all when omitted).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export const sum = reduction<"sum", "numeric">("sum", "reduce_sum");
/**
 * Mean over axes (all when omitted); float32 only.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export const mean = reduction<"mean", "float">("mean", "reduce_mean");
/**
 * Maximum over axes (all when omitted).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atClients(f32(["N", 3])) }, ({ x }) => reduceMax(map((xm) => max(xm, 0), x))); // f32[3]@SERVER
 */
export const max = reduction<"max", "numeric">("max", "reduce_max");
/**
 * Minimum over axes (all when omitted).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atClients(f32(["N", 3])) }, ({ x }) => reduceMin(map((xm) => min(xm, 0), x))); // f32[3]@SERVER
 */
export const min = reduction<"min", "numeric">("min", "reduce_min");

/**
 * Index of the maximum along an axis (default the last), as int32.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function argmax<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"argmax", X>>,
  axis?: Checked<Axis, Reduce<ShapeOf<X>, Axis, false, Ctx<"argmax", X>>>,
): Outcome<ReduceOutcome<"argmax", X, Axis, false, "int32">> {
  return graph("argmax").emit("argmax", [tracer(x, "argmax")], { axis: (axis as number | undefined) ?? -1 }, "argmax")[0] as never;
}

/**
 * Index of the minimum along an axis (default the last), as int32; ties to the first, as
 * argmax. A composite: argmax(-x) for f32 (negation is exact), argmax(-1 - x) for i32 (which,
 * unlike -x, does not overflow at the smallest int32).
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ d: atServer(f32(["N", 5])) }, ({ d }) => argmin(d, -1)); // i32[N]@SERVER: the nearest of 5 centres
 */
export function argmin<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"argmin", X>>,
  axis?: Checked<Axis, Reduce<ShapeOf<X>, Axis, false, Ctx<"argmin", X>>>,
): Outcome<ReduceOutcome<"argmin", X, Axis, false, "int32">> {
  const op = "argmin";
  const xt = tracer(x, op);
  const flipped = xt.dtype === "int32" ? emitBinary("sub", op, -1, xt) : graph(op).emit("neg", [xt], {}, op)[0]!;
  return graph(op).emit("argmax", [flipped], { axis: (axis as number | undefined) ?? -1 }, op)[0] as never;
}

/**
 * norm()'s options: the order (1, 2 or Infinity; default 2), the axes (all by default) and whether to keep them as unit dims.
 *
 * @example
 * program({ x: atServer(f32(["N", 3])) }, ({ x }) => norm(x, { ord: 1, axis: -1 } satisfies NormOptions)); // f32[N]: L1 norm per row
 */
export interface NormOptions {
  readonly ord?: number;
  readonly axis?: number | readonly number[];
  readonly keepDims?: boolean;
}
type AxisOf<O> = O extends { readonly axis: infer A } ? A : undefined;
type KeepOf<O> = O extends { readonly keepDims: true } ? true : false;

/**
 * The vector norm over axes (all when omitted, the flattened tensor's), f32: ord 2 (default)
 * sqrt(sum(x * x)), ord 1 sum(|x|), ord Infinity max(|x|). A composite: its gradient is
 * x / norm for ord 2, NaN at x = 0 as in JAX (use square of it, or squaredDistance, near 0).
 * For a whole tree's norm, globalNorm.
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function norm<X extends Tensor, const O extends NormOptions = {}>(
  x: Validate<X, FloatCheck<"norm", X>>,
  options?: Checked<O, Reduce<ShapeOf<X>, AxisOf<O>, KeepOf<O>, Ctx<"norm", X>>>,
): Outcome<ReduceOutcome<"norm", X, AxisOf<O>, KeepOf<O>, "float32">> {
  const op = "norm";
  const { ord = 2, axis, keepDims } = (options ?? {}) as NormOptions;
  const xt = tracer(x, op);
  requireDType(op, xt.dtype, "float32");
  const magnitude = () => graph(op).emit("abs", [xt], {}, op)[0]!;
  if (ord === 1) return reduceAxes(op, "reduce_sum", magnitude(), axis, keepDims) as never;
  if (ord === Infinity) return reduceAxes(op, "reduce_max", magnitude(), axis, keepDims) as never;
  if (ord !== 2) throw ftError("FT305", { option: "norm() ord", why: `must be 1, 2 or Infinity, got ${String(ord)}` });
  return graph(op).emit("sqrt", [reduceAxes(op, "reduce_sum", emitBinary("mul", op, xt, xt), axis, keepDims)], {}, op)[0] as never;
}

type DistanceOutcome<A extends Tensor, B extends Tensor, Axis, K extends boolean> =
  Binary<"squaredDistance", "float", A, B, Broadcast<ShapeOf<A>, ShapeOf<B>, Ctx<"squaredDistance", A, B>>> extends infer D
    ? D extends Tensor
      ? ReduceOutcome<"squaredDistance", D, Axis, K, "float32">
      : D
    : never;

/**
 * sum((a - b)^2) over axes (all when omitted) of a and b broadcast together, f32: the squared
 * Euclidean distance (k-means, Krum). A composite of sub, mul and reduce_sum, so its gradient
 * 2 (a - b) is defined everywhere, also where a = b.
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 */
export function squaredDistance<A extends Tensor, B extends Tensor, const Axis extends Axes = undefined, K extends boolean = false>(
  a: A,
  b: Checked<B, DistanceOutcome<A, B, Axis, K>>,
  axis?: Axis,
  keepDims?: K,
): Outcome<DistanceOutcome<A, B, Axis, K>> {
  const op = "squaredDistance";
  const diff = emitBinary("sub", op, tracer(a, op), tracer(b, op));
  requireDType(op, diff.dtype, "float32");
  return reduceAxes(op, "reduce_sum", emitBinary("mul", op, diff, diff), axis, keepDims) as never;
}

/**
 * Converts the dtype (the only way to mix float32, int32 and bool).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function cast<X extends Tensor, D extends DType>(x: X, dtype: D): Tensor<ShapeOf<X>, D, PlacementOf<X>> {
  if (!["float32", "int32", "bool"].includes(dtype)) throw ftError("FT305", { option: "cast dtype", why: `unknown dtype ${String(dtype)}` });
  return graph("cast").emit("cast", [tracer(x, "cast")], { dtype }, "cast")[0] as never;
}

/** where()'s branches may be plain numbers: they take the other branch's dtype. */
type WhereOutcome<C extends Tensor, A, B> = AsTensor<A, B> extends infer TA extends Tensor
  ? AsTensor<B, A> extends infer TB extends Tensor
    ? WhereOf<C, TA, TB>
    : never
  : never;
type WhereOf<C extends Tensor, A extends Tensor, B extends Tensor> =
  DTypeOf<C> extends "bool"
    ? Binary<"where", "any", A, B, Broadcast<ShapeOf<A>, ShapeOf<B>, Ctx<"where", A, B>>> extends infer AB
      ? AB extends Tensor
        ? WithCondition<C, AB>
        : AB
      : never
    : FailWith<"FT205", { op: "where"; want: "bool"; got: DTypeOf<C> extends "int32" ? "i32" : "f32" }>;
/**
 * The condition meets the branches' result in placement and shape only: it is bool while the
 * branches need not be, so it must not go through Binary's dtype rule.
 */
type WithCondition<C extends Tensor, AB extends Tensor> =
  JoinPlacement<"where", C, AB> extends infer P
    ? P extends Fail
      ? P
      : ShapeOp<Broadcast<ShapeOf<C>, ShapeOf<AB>, Ctx<"where", C, AB>>, DTypeOf<AB>, Extract<P, Placement>>
    : never;

/**
 * Elementwise choice: a where cond holds, b elsewhere (shapes broadcast; a number takes the other branch's dtype).
 *
 * @placement cond, a and b at one placement P (or local): result at P; SERVER with CLIENTS is
 * FT104.
 */
export function where<C extends Tensor, A extends Tensor | number, B extends Tensor | number>(
  cond: C,
  a: A,
  b: Checked<B, WhereOutcome<C, A, B>>,
): Outcome<WhereOutcome<C, A, B>> {
  const op = "where";
  const other = typeof a === "number" ? (b as unknown as Tracer) : (a as unknown as Tracer);
  const ta = asTracer(a, op, typeof other === "number" ? undefined : other);
  return graph(op).emit("where", [tracer(cond, op), ta, asTracer(b, op, ta)], {}, op)[0] as never;
}

/**
 * Limits every element to [lo, hi].
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 */
export function clip<X extends Tensor>(x: Validate<X, NumericCheck<"clip", X>>, lo: number, hi: number): Presumed<X> {
  if (!(lo <= hi)) throw ftError("FT305", { option: "clip bounds", why: `lo ${lo} is above hi ${hi}` });
  return emitBinary("minimum", "clip", emitBinary("maximum", "clip", tracer(x, "clip"), lo), hi) as never;
}

/**
 * Zeros of x's shape, dtype and placement.
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ w: atServer(f32([10])) }, ({ w }) => zerosLike(w)); // f32[10]@SERVER
 */
export function zerosLike<X extends Tensor>(x: X): X {
  const t = tracer(x, "zerosLike");
  const zero = asTracer(0, "zerosLike", t);
  return graph("zerosLike").emit("broadcast_like", [zero, t], {}, "zerosLike")[0] as never;
}
