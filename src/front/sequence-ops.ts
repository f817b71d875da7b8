/**
 * Operations along one axis: running sums, lookups (embeddings) and sorting. Each
 * checks its axis (FT204) and dtype (FT205) in its parameter types and again in the primitive
 * rules when tracing, with the same texts.
 */
import type { Checked, Fail, FailWith, Message, Outcome, Presumed, Validate } from "../../types/errors.js";
import type { JoinPlacement } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { IsTuple, NormalizeAxis } from "../../types/shape.js";
import type { DType, DTypeOf, Dim, Placement, PlacementOf, Shape, ShapeOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { currentGraph, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";

type NumericCheck<Op extends string, X extends Tensor> = DTypeOf<X> extends "bool"
  ? Message<"FT205", { op: Op; want: "f32 or i32"; got: "bool" }>
  : never;
type AxisCheck<Op extends string, X extends Tensor, Axis extends number> = NormalizeAxis<Axis, ShapeOf<X>["length"]> extends "fail"
  ? Message<"FT204", { op: Op; axis: Axis; a: Print<X>; rank: ShapeOf<X>["length"] }>
  : never;

/**
 * cumsum()'s options: `exclusive` leaves each entry out of its own sum, `reverse` sums from the
 * end of the axis.
 *
 * @example
 * program({ x: atServer(f32([4])) }, ({ x }) => cumsum(x, -1, { reverse: true } satisfies CumsumOptions)); // sums to the end
 */
export interface CumsumOptions {
  /** Leave each entry out of its own sum (the first sum is 0). */
  readonly exclusive?: boolean;
  /** Sum from the end of the axis towards its start. */
  readonly reverse?: boolean;
}

/**
 * Running sums along an axis (default the last), numpy's cumsum: entry i is the sum of the
 * entries up to and including i, or with `exclusive` up to i - 1, or with `reverse` from i to
 * the end. Its gradient is the running sum the other way.
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atServer(f32([5])) }, ({ x }) => cumsum(x, -1, { exclusive: true })); // [0, x0, x0+x1, ...]
 */
export function cumsum<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"cumsum", X>>,
  axis?: Validate<Axis, AxisCheck<"cumsum", X, Axis>>,
  options?: CumsumOptions,
): Presumed<X> {
  const op = "cumsum";
  for (const key of Object.keys(options ?? {})) {
    if (key !== "exclusive" && key !== "reverse") throw ftError("FT305", { option: `cumsum ${key}`, why: "the options are exclusive and reverse" });
  }
  const attrs = { axis: (axis as number | undefined) ?? -1, exclusive: options?.exclusive === true, reverse: options?.reverse === true };
  return currentGraph(op).emit("cumsum", [asTracer(x, op)], attrs, op)[0] as never;
}

/** [first N dims, the rest] of a shape. */
type SplitAt<S extends Shape, N extends number, Acc extends Dim[] = []> = Acc["length"] extends N
  ? [Acc, S]
  : S extends readonly [infer H extends Dim, ...infer T extends Dim[]]
    ? SplitAt<T, N, [...Acc, H]>
    : [Acc, S];
/** x[...pre, n, ...post] looked up by i[...I]: [...pre, ...I, ...post] (a bad axis is reported on the axis itself). */
type TakeShape<S extends Shape, I extends Shape, Axis extends number> = IsTuple<S> extends false
  ? Dim[]
  : IsTuple<I> extends false
    ? Dim[]
    : NormalizeAxis<Axis, S["length"]> extends infer N extends number
      ? number extends N
        ? Dim[]
        : SplitAt<S, N> extends [infer Pre extends Dim[], readonly [Dim, ...infer Post extends Dim[]]]
          ? [...Pre, ...I, ...Post]
          : Dim[]
      : Dim[];
type TakeOutcome<X extends Tensor, I extends Tensor, Axis extends number> = DType extends DTypeOf<I>
  ? TakeOf<X, I, Axis>
  : DTypeOf<I> extends "int32"
    ? TakeOf<X, I, Axis>
    : FailWith<"FT205", { op: "take"; want: "i32"; got: DTypeOf<I> extends "float32" ? "f32" : "bool" }>;
type TakeOf<X extends Tensor, I extends Tensor, Axis extends number> =
  JoinPlacement<"take", X, I> extends infer P
    ? P extends Fail
      ? P
      : Tensor<TakeShape<ShapeOf<X>, ShapeOf<I>, Axis>, DTypeOf<X>, Extract<P, Placement>>
    : never;

/**
 * Rows of x along an axis (default 0) picked by int32 indices, numpy's take: x[...pre, n,
 * ...post] and indices[...I] give [...pre, ...I, ...post]; `take(embedding, ids)` is an
 * embedding lookup. An index outside [0, n) picks a row of zeros (as a lookup through oneHot
 * would). The gradient adds each cotangent row into the row it came from (a scatter-add).
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ e: atServer(f32([100, 16])), ids: atServer(i32(["T"])) }, ({ e, ids }) => take(e, ids)); // an embedding lookup: f32[T,16]
 */
export function take<X extends Tensor, I extends Tensor, const Axis extends number = 0>(
  x: Validate<X, NumericCheck<"take", X>>,
  indices: Checked<I, TakeOutcome<X, I, Axis>>,
  axis?: Validate<Axis, AxisCheck<"take", X, Axis>>,
): Outcome<TakeOutcome<X, I, Axis>> {
  const op = "take";
  return currentGraph(op).emit("take", [asTracer(x, op), asTracer(indices, op)], { axis: (axis as number | undefined) ?? 0 }, op)[0] as never;
}

/**
 * take() under TensorFlow's name.
 *
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ e: atServer(f32([100, 16])), ids: atServer(i32(["T"])) }, ({ e, ids }) => gather(e, ids)); // f32[T,16]@SERVER
 */
export const gather = take;

/** sort's values and positions, along an axis; k of them from the start (all when null). */
function sorted(op: string, x: unknown, axis: number, descending: boolean, k: number | null): Tracer[] {
  if (typeof descending !== "boolean") throw ftError("FT305", { option: `${op} descending`, why: `must be true or false, got ${String(descending)}` });
  return currentGraph(op).emit("sort", [asTracer(x, op)], { axis, descending, k }, op);
}

/**
 * x's entries along an axis (default the last) in ascending order, or descending; equal
 * entries keep their order (a stable sort). The gradient sends each sorted entry's cotangent
 * back to the position it came from.
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atClients(f32([5])) }, ({ x }) => map((xm) => sort(xm), x)); // each client's entries, ascending
 */
export function sort<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"sort", X>>,
  axis?: Validate<Axis, AxisCheck<"sort", X, Axis>>,
  descending = false,
): Presumed<X> {
  return sorted("sort", x, (axis as number | undefined) ?? -1, descending, null)[0] as never;
}

/**
 * The int32 positions that sort x along an axis (default the last): sort(x) is take_along_axis(x, argsort(x)).
 *
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ x: atServer(f32([5])) }, ({ x }) => argsort(x, -1, true)); // i32[5]: positions, largest first
 */
export function argsort<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"argsort", X>>,
  axis?: Validate<Axis, AxisCheck<"argsort", X, Axis>>,
  descending = false,
): Presumed<Tensor<ShapeOf<X>, "int32", PlacementOf<X>>> {
  return sorted("argsort", x, (axis as number | undefined) ?? -1, descending, null)[1] as never;
}

/** The last dim replaced by K. */
type WithLast<S extends Shape, K extends number> = S extends readonly [...infer Init extends Dim[], Dim] ? [...Init, K] : Dim[];
/**
 * topk()'s result: the k largest `values` along the last axis and their int32 `indices`, both
 * shaped like x with the last dim k, at x's placement.
 *
 * @example
 * program({ s: atServer(f32([100])) }, ({ s }) => {
 *   const best: TopK<typeof s, 3> = topk(s, 3);
 *   return best.values; // f32[3]@SERVER
 * });
 */
export interface TopK<X extends Tensor, K extends number> {
  readonly values: Tensor<WithLast<ShapeOf<X>, K>, DTypeOf<X>, PlacementOf<X>>;
  readonly indices: Tensor<WithLast<ShapeOf<X>, K>, "int32", PlacementOf<X>>;
}

/**
 * The k largest entries along the last axis, largest first (the lower position first among
 * equals), and their int32 positions, as tf.topk and jax.lax.top_k give them. k outside
 * 0..n is FT302. Gradients flow to the positions the values came from.
 * @placement keeps its operand's placement: `x@P` to `@P` (SERVER, CLIENTS, a member inside map,
 * or local).
 * @example
 * program({ scores: atServer(f32([100])) }, ({ scores }) => topk(scores, 5).indices); // i32[5]@SERVER
 */
export function topk<X extends Tensor, const K extends number>(x: Validate<X, NumericCheck<"topk", X>>, k: K): Presumed<TopK<X, K>> {
  const [values, indices] = sorted("topk", x, -1, true, k);
  return { values, indices } as never;
}
