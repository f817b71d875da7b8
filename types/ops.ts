/**
 * Result types of tensor operations: placement, dtype and shape rules combined. Each outcome
 * is the result type, or a Fail whose message the API signature reports (see errors.ts).
 */
import type { Fail, FailWith, Message } from "./errors.js";
import type { JoinPlacement } from "./placement.js";
import type { At, Print } from "./print.js";
import type { Broadcast, OpContext } from "./shape.js";
import type { DType, DTypeOf, IsAny, Leaves, Placement, PlacementOf, Shape, ShapeOf, Tensor, Typed, Unreleased } from "./tensor.js";

type Short = { float32: "f32"; int32: "i32"; bool: "bool" };

/**
 * Dtype classes of elementwise operations:
 * - numeric: f32 or i32, result as the operands (add, sub, mul, maximum, minimum, neg, abs);
 * - float: f32 only (div, pow, exp, log, sqrt, sigmoid, tanh, sin, cos, softmax, ...);
 * - compare: f32 or i32, result bool (less, greater, ...);
 * - equality: any dtype, result bool (equal, notEqual);
 * - logical: bool only (logicalAnd, logicalOr, logicalNot);
 * - any: any dtype, kept (stopGradient).
 */
export type DTypeClass = "numeric" | "float" | "compare" | "equality" | "logical" | "any";

type Accepted = {
  numeric: "float32" | "int32";
  float: "float32";
  compare: "float32" | "int32";
  equality: DType;
  logical: "bool";
  any: DType;
};
type Wanted = { numeric: "f32 or i32"; float: "f32"; compare: "f32 or i32"; equality: "f32, i32 or bool"; logical: "bool"; any: "any" };

/** The dtype of the result, or FT205. */
export type ElementwiseDType<Op extends string, Class extends DTypeClass, DA extends DType, DB extends DType, Path extends string = ""> = DType extends DA
  ? DA
  : DType extends DB
    ? DB
    : [DA] extends [DB]
      ? DA extends Accepted[Class]
        ? Class extends "compare" | "equality"
          ? "bool"
          : DA
        : FailWith<"FT205", { op: Op; want: Wanted[Class]; got: At<Short[DA], Path> }>
      : FailWith<"FT205", { op: Op; want: Short[DA]; got: At<Short[DB], Path> }>;

/** A plain JavaScript number: a local scalar that takes the other operand's dtype. */
export type AsTensor<X, Other> = X extends number ? Tensor<[], Other extends Typed ? DTypeOf<Other> : "float32", "local"> : X;

/** First failure among the three rule results, else the tensor they describe. */
type Combine<P, D, S> = P extends Fail
  ? P
  : D extends Fail
    ? D
    : S extends Fail
      ? S
      : S extends Shape
        ? D extends DType
          ? P extends Placement
            ? Tensor<S, D, P>
            : never
          : never
        : never;

/** An elementwise operation on two leaves (tensors or numbers), at Path in a tree. */
export type LeafBinary<Op extends string, Class extends DTypeClass, A, B, Path extends string = ""> = AsTensor<A, B> extends infer TA extends Typed
  ? AsTensor<B, A> extends infer TB extends Typed
    ? Combine<
        JoinPlacement<Op, TA, TB, Path>,
        ElementwiseDType<Op, Class, DTypeOf<TA>, DTypeOf<TB>, Path>,
        Broadcast<ShapeOf<TA>, ShapeOf<TB>, { op: Op; a: TA; b: Path extends "" ? TB : At<Print<TB>, Path> }>
      >
    : never
  : never;

type IsLeaf<X> = X extends Typed ? true : X extends number ? true : false;

/**
 * An elementwise operation on operands that may be trees: two trees pair their leaves by
 * position (FT107 when the structures differ); a leaf meets every leaf of a tree.
 */
export type Elementwise<Op extends string, Class extends DTypeClass, A, B, Path extends string = ""> = true extends IsAny<A> | IsAny<B>
  ? any // eslint-disable-line @typescript-eslint/no-explicit-any -- an `any` operand opts out (see IsAny)
  : IsLeaf<A> extends true
  ? IsLeaf<B> extends true
    ? LeafBinary<Op, Class, A, B, Path>
    : { -readonly [K in keyof B]: Elementwise<Op, Class, A, B[K], SubPath<Path, B, K>> }
  : IsLeaf<B> extends true
    ? { -readonly [K in keyof A]: Elementwise<Op, Class, A[K], B, SubPath<Path, A, K>> }
    : SameKeys<A, B> extends true
      ? { -readonly [K in keyof A]: Elementwise<Op, Class, A[K], B[K & keyof B], SubPath<Path, A, K>> }
      : FailWith<"FT107", { op: Op; what: StructureDiff<A, B, Path> }>;

type SameKeys<A, B> = A extends readonly unknown[]
  ? B extends readonly unknown[]
    ? [A["length"]] extends [B["length"]]
      ? true
      : false
    : false
  : B extends readonly unknown[]
    ? false
    : [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false;

/**
 * How the top levels of two trees differ (SameKeys is false), as FT107 says it
 * (src/front/elementwise.ts says the same at trace time): each key one operand lacks, or
 * arrays of different lengths.
 */
type StructureDiff<A, B, Path extends string> = A extends readonly unknown[]
  ? B extends readonly unknown[]
    ? `${Path extends "" ? "the operands" : Path} have ${A["length"] & number} vs ${B["length"] & number} elements`
    : `${Path extends "" ? "the root" : Path} is an array in the first operand, a record in the second`
  : B extends readonly unknown[]
    ? `${Path extends "" ? "the root" : Path} is a record in the first operand, an array in the second`
    :
        | { [K in Exclude<keyof A, keyof B> & string]: `the second operand lacks ${SubPath<Path, A, K>}` }[Exclude<keyof A, keyof B> & string]
        | { [K in Exclude<keyof B, keyof A> & string]: `the first operand lacks ${SubPath<Path, B, K>}` }[Exclude<keyof B, keyof A> & string];
export type SubPath<Path extends string, T, K> = T extends readonly unknown[]
  ? `${Path}[${K & (string | number)}]`
  : Path extends ""
    ? `${K & string}`
    : `${Path}.${K & string}`;

/** An elementwise function of one operand, over every leaf of a tree. */
export type Unary<Op extends string, Class extends DTypeClass, A> = IsAny<A> extends true
  ? A
  : A extends Typed
  ? ElementwiseDType<Op, Class, DTypeOf<A>, DTypeOf<A>> extends infer D
    ? D extends Fail
      ? D
      : Tensor<ShapeOf<A>, Class extends "compare" | "equality" ? "bool" : DTypeOf<A>, Op extends "stopGradient" ? Unreleased<PlacementOf<A>> : PlacementOf<A>>
    : never
  : { -readonly [K in keyof A]: Unary<Op, Class, A[K]> };

/** The shape of a single-tensor operation, kept at the operand's placement and given dtype. */
export type ShapeOp<S, D extends DType, P extends Placement> = S extends Fail ? S : S extends Shape ? Tensor<S, D, P> : never;

/** An operation on two tensors whose shape rule gives S (matmul, conv2d). */
export type Binary<Op extends string, Class extends DTypeClass, A extends Typed, B extends Typed, S> = Combine<
  JoinPlacement<Op, A, B>,
  ElementwiseDType<Op, Class, DTypeOf<A>, DTypeOf<B>>,
  S
>;

/** An operation on a list of tensors (concat, stack): placements and dtypes fold left to right. */
export type Many<Op extends string, Xs extends readonly Typed[], S> = Combine<JoinAll<Op, Xs>, SameDTypes<Op, Xs>, S>;
type JoinAll<Op extends string, Xs extends readonly Typed[]> = Xs extends readonly [
  infer A extends Typed,
  infer B extends Typed,
  ...infer R extends readonly Typed[],
]
  ? JoinPlacement<Op, A, B> extends infer P
    ? P extends Fail
      ? P
      : JoinAll<Op, [PlacementOf<A> extends P ? A : B, ...R]>
    : never
  : Xs extends readonly [infer A extends Typed]
    ? PlacementOf<A>
    : Placement;
type SameDTypes<Op extends string, Xs extends readonly Typed[]> = Xs extends readonly [
  infer A extends Typed,
  infer B extends Typed,
  ...infer R extends readonly Typed[],
]
  ? [DTypeOf<A>] extends [DTypeOf<B>]
    ? SameDTypes<Op, [B, ...R]>
    : FailWith<"FT205", { op: Op; want: Short[DTypeOf<A>]; got: Short[DTypeOf<B>] }>
  : Xs extends readonly [infer A extends Typed]
    ? DTypeOf<A>
    : DType;
export type ShapesOf<Xs extends readonly Typed[]> = { [K in keyof Xs]: ShapeOf<Xs[K]> };

export type Ctx<Op extends string, A, B = ""> = { op: Op; a: A; b: B } & OpContext;

/**
 * FT205 for a tree with a leaf that is not float32, for operations on trees of float32
 * values only (globalNorm, clipByNorm, stochasticQuantize); a dtype not known statically is
 * checked while tracing.
 */
export type FloatTreeCheck<Op extends string, T> = DType extends DTypeOf<Leaves<T>>
  ? never
  : [Exclude<DTypeOf<Leaves<T>>, "float32">] extends [never]
    ? never
    : Message<"FT205", { op: Op; want: "f32"; got: Short[Exclude<DTypeOf<Leaves<T>>, "float32">] }>;

/** A dtype requirement on a single operand, as FT205. */
export type RequireDType<Op extends string, X extends Typed, Want extends DType> = DType extends DTypeOf<X>
  ? X
  : DTypeOf<X> extends Want
    ? X
    : FailWith<"FT205", { op: Op; want: Short[Want]; got: Short[DTypeOf<X>] }>;
