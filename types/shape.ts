/**
 * Shape algebra at type level (SPEC section 4). Each rule returns the result shape, or a Fail
 * carrying the FT2xx message. `Ctx` names the operation and its printed operands so the
 * message reads like the runtime's.
 *
 * Dims: a number literal, a name (equal names agree; a name meets a literal only through 1),
 * or `number`, which is unknown until run time and therefore checked there.
 * Axes and ranks are small, so they use tuple lengths; dim values use digit arithmetic.
 */
import type { AddDigits, CeilDivDigit, Digit, Digits, FromDigits, SubDigits, ToDigits } from "./digits.js";
import type { Fail, FailWith } from "./errors.js";
import type { PrintOperand } from "./print.js";
import type { Dim, Shape } from "./tensor.js";

/** The operation and its operands (types, shapes or text), printed only when a check fails. */
export interface OpContext {
  readonly op: string;
  readonly a: unknown;
  readonly b: unknown;
}
type Printed<Ctx extends OpContext> = { op: Ctx["op"]; a: PrintOperand<Ctx["a"]>; b: PrintOperand<Ctx["b"]> };

/** True when a dim is unknown until run time. */
export type IsUnknownDim<D> = number extends D ? true : string extends D ? true : false;
export type IsTuple<S extends Shape> = number extends S["length"] ? false : true;

/** Whether two dims may be the same size: equal, or either unknown. */
export type DimsAgree<A, B> = IsUnknownDim<A> extends true
  ? true
  : IsUnknownDim<B> extends true
    ? true
    : [A] extends [B]
      ? [B] extends [A]
        ? true
        : false
      : false;

/** The more informative of two agreeing dims. */
type KnownDim<A, B> = IsUnknownDim<A> extends true ? B : A;

type BroadcastDim<A, B> = DimsAgree<A, B> extends true
  ? KnownDim<A, B>
  : A extends 1
    ? B
    : B extends 1
      ? A
      : "fail";

/** numpy broadcasting, aligned from the right. */
export type Broadcast<A extends Shape, B extends Shape, Ctx extends OpContext, Acc extends Dim[] = []> =
  IsTuple<A> extends false
    ? Dim[]
    : IsTuple<B> extends false
      ? Dim[]
      : A extends readonly [...infer RA extends Shape, infer LA extends Dim]
        ? B extends readonly [...infer RB extends Shape, infer LB extends Dim]
          ? BroadcastDim<LA, LB> extends infer D
            ? D extends "fail"
              ? FailWith<"FT201", Printed<Ctx> & { da: PrintDim<LA>; db: PrintDim<LB> }>
              : Broadcast<RA, RB, Ctx, [D & Dim, ...Acc]>
            : never
          : [...A, ...Acc]
        : [...B, ...Acc];

type PrintDim<D> = IsUnknownDim<D> extends true ? "?" : `${D & (string | number)}`;

/** matmul (numpy semantics: rank-1 operands are vectors, batch dims broadcast). */
export type MatMul<A extends Shape, B extends Shape, Ctx extends OpContext> = IsTuple<A> extends false
  ? Dim[]
  : IsTuple<B> extends false
    ? Dim[]
    : A extends readonly [infer K extends Dim]
      ? B extends readonly [infer K2 extends Dim]
        ? Contract<K, K2, [], Ctx>
        : B extends readonly [...infer BB extends Shape, infer K2 extends Dim, infer M extends Dim]
          ? Contract<K, K2, [...BB, M], Ctx>
          : Rank0<Ctx>
      : A extends readonly [...infer BA extends Shape, infer N extends Dim, infer K extends Dim]
        ? B extends readonly [infer K2 extends Dim]
          ? Contract<K, K2, [...BA, N], Ctx>
          : B extends readonly [...infer BB extends Shape, infer K2 extends Dim, infer M extends Dim]
            ? Broadcast<BA, BB, Ctx> extends infer Batch
              ? Batch extends Fail
                ? Batch
                : Batch extends Shape
                  ? Contract<K, K2, [...Batch, N, M], Ctx>
                  : never
              : never
            : Rank0<Ctx>
        : Rank0<Ctx>;
type Contract<K, K2, Result, Ctx extends OpContext> = DimsAgree<K, K2> extends true
  ? Result
  : FailWith<"FT202", Printed<Ctx> & { ka: PrintDim<K>; kb: PrintDim<K2> }>;
type Rank0<Ctx extends OpContext> = FailWith<"FT204", { op: Ctx["op"]; axis: -1; a: PrintOperand<Ctx["a"]>; rank: 0 }>;

// ---- axes -------------------------------------------------------------------------------

// `never` (the rank of a failed operation's result) would never be reached: count to nothing.
type Count<N extends number, Acc extends 0[] = []> = [N] extends [never]
  ? []
  : Acc["length"] extends N
    ? Acc
    : Count<N, [...Acc, 0]>;

/** The axis as 0..rank-1, or "fail" when out of range; `number` when not a literal. */
export type NormalizeAxis<Axis extends number, Rank extends number> = number extends Axis
  ? number
  : `${Axis}` extends `-${infer Back extends number}`
    ? Count<Rank> extends [...Count<Back>, ...infer Rest]
      ? Rest["length"]
      : "fail"
    : Count<Rank> extends [...Count<Axis>, 0, ...unknown[]]
      ? Axis
      : "fail";

type AxisFail<Axis, Ctx extends OpContext, S extends Shape> = FailWith<
  "FT204",
  { op: Ctx["op"]; axis: Axis & (number | string); a: PrintOperand<Ctx["a"]>; rank: S["length"] }
>;

/** Normalizes a list of axes, or fails on the first bad one. */
export type NormalizeAxes<Axes extends readonly number[], S extends Shape, Ctx extends OpContext, Acc extends number[] = []> =
  Axes extends readonly [infer H extends number, ...infer R extends readonly number[]]
    ? NormalizeAxis<H, S["length"]> extends infer N
      ? N extends "fail"
        ? AxisFail<H, Ctx, S>
        : NormalizeAxes<R, S, Ctx, [...Acc, N & number]>
      : never
    : Acc;

/** sum/mean/max/min over axes (all axes when none are given). */
export type Reduce<S extends Shape, Axes, KeepDims extends boolean, Ctx extends OpContext> = IsTuple<S> extends false
  ? Dim[]
  : Axes extends undefined
    ? KeepDims extends true
      ? { [K in keyof S]: 1 }
      : []
    : NormalizeAxes<Axes extends number ? [Axes] : Extract<Axes, readonly number[]>, S, Ctx> extends infer N
      ? N extends Fail
        ? N
        : N extends readonly number[]
          ? number extends N[number]
            ? Dim[]
            : DropAxes<S, N[number], KeepDims>
          : never
      : never;

// Dropped axes are first marked `never` so that Acc's length keeps counting the source axes.
type DropAxes<S extends Shape, Drop extends number, KeepDims extends boolean, Acc extends Dim[] = []> = S extends readonly [
  infer H extends Dim,
  ...infer R extends Shape,
]
  ? Acc["length"] extends Drop
    ? KeepDims extends true
      ? DropAxes<R, Drop, KeepDims, [...Acc, 1]>
      : DropAxes<R, Drop, KeepDims, [...Acc, never]>
    : DropAxes<R, Drop, KeepDims, [...Acc, H]>
  : RemoveNever<Acc>;
type RemoveNever<T extends readonly unknown[], Acc extends Dim[] = []> = T extends readonly [infer H, ...infer R]
  ? [H] extends [never]
    ? RemoveNever<R, Acc>
    : RemoveNever<R, [...Acc, H & Dim]>
  : Acc;

/** transpose(perm): perm must name every axis once; the default reverses the axes. */
export type Transpose<S extends Shape, Perm, Ctx extends OpContext> = IsTuple<S> extends false
  ? Dim[]
  : Perm extends undefined
    ? ReverseShape<S>
    : Perm extends readonly number[]
      ? Perm["length"] extends S["length"]
        ? NormalizeAxes<Perm, S, Ctx> extends infer N
          ? N extends Fail
            ? N
            : N extends number[]
              ? Repeated<N> extends infer Dup
                ? [Dup] extends [never]
                  ? { -readonly [K in keyof N]: S[N[K] & number] }
                  : AxisFail<Dup, Ctx, S>
                : never
              : never
          : never
        : AxisFail<Perm["length"], Ctx, S>
      : Dim[];
type ReverseShape<S extends Shape, Acc extends Dim[] = []> = S extends readonly [infer H extends Dim, ...infer R extends Shape]
  ? ReverseShape<R, [H, ...Acc]>
  : Acc;
/** The first axis that appears twice, or never. */
type Repeated<N extends number[], Seen = never> = N extends [infer H extends number, ...infer R extends number[]]
  ? H extends Seen
    ? H
    : Repeated<R, Seen | H>
  : never;

// ---- joining and slicing ----------------------------------------------------------------

/** Sum of two dims: exact for literals, unknown otherwise. */
export type AddDims<A, B> = A extends number
  ? B extends number
    ? IsUnknownDim<A> extends true
      ? number
      : IsUnknownDim<B> extends true
        ? number
        : FromDigits<AddDigits<ToDigits<A>, ToDigits<B>>>
    : number
  : number;

/** concat along an axis: equal rank, other dims agree, the axis dims add up. */
export type Concat<Shapes extends readonly Shape[], Axis extends number, Ctx extends OpContext> = Shapes extends readonly [
  infer First extends Shape,
  ...infer Rest extends readonly Shape[],
]
  ? IsTuple<First> extends false
    ? Dim[]
    : NormalizeAxis<Axis, First["length"]> extends infer N
      ? N extends "fail"
        ? AxisFail<Axis, Ctx, First>
        : number extends N
          ? Dim[]
          : ConcatInto<First, Rest, N & number, Ctx>
      : never
  : Dim[];
type ConcatInto<Acc extends Shape, Rest extends readonly Shape[], Axis extends number, Ctx extends OpContext> = Rest extends readonly [
  infer Next extends Shape,
  ...infer R extends readonly Shape[],
]
  ? JoinDims<Acc, Next, Axis, "add"> extends infer J
    ? J extends "fail"
      ? FailWith<"FT206", { op: Ctx["op"]; want: `equal dims outside axis ${Axis}`; a: `[${Join<Acc>}]`; b: `[${Join<Next>}]` }>
      : J extends Shape
        ? ConcatInto<J, R, Axis, Ctx>
        : never
    : never
  : Acc;

/** Dim-wise join of two shapes: at Axis the dims add ("add") or must agree too ("agree"). */
type JoinDims<A extends Shape, B extends Shape, Axis extends number, Mode, Acc extends Dim[] = []> = A["length"] extends B["length"]
  ? A extends readonly [infer HA extends Dim, ...infer RA extends Shape]
    ? B extends readonly [infer HB extends Dim, ...infer RB extends Shape]
      ? Acc["length"] extends Axis
        ? Mode extends "add"
          ? JoinDims<RA, RB, Axis, Mode, [...Acc, AddDims<HA, HB>]>
          : DimsAgree<HA, HB> extends true
            ? JoinDims<RA, RB, Axis, Mode, [...Acc, KnownDim<HA, HB>]>
            : "fail"
        : DimsAgree<HA, HB> extends true
          ? JoinDims<RA, RB, Axis, Mode, [...Acc, KnownDim<HA, HB>]>
          : "fail"
      : Acc
    : Acc
  : "fail";

type Join<S extends Shape, Acc extends string = ""> = S extends readonly [infer H, ...infer R extends Shape]
  ? Join<R, Acc extends "" ? PrintDim<H> : `${Acc},${PrintDim<H>}`>
  : Acc;

/** stack along a new axis: all shapes agree; the new dim is the number of operands. */
export type Stack<Shapes extends readonly Shape[], Axis extends number, Ctx extends OpContext> = Shapes extends readonly [
  infer First extends Shape,
  ...infer Rest extends readonly Shape[],
]
  ? IsTuple<First> extends false
    ? Dim[]
    : StackAgree<First, Rest, Ctx> extends infer S
      ? S extends Fail
        ? S
        : S extends Shape
          ? InsertDim<S, Axis, Shapes["length"], Ctx>
          : never
      : never
  : Dim[];
type StackAgree<Acc extends Shape, Rest extends readonly Shape[], Ctx extends OpContext> = Rest extends readonly [
  infer Next extends Shape,
  ...infer R extends readonly Shape[],
]
  ? JoinDims<Acc, Next, -1, "agree"> extends infer J
    ? J extends "fail"
      ? FailWith<"FT206", { op: Ctx["op"]; want: "equal shapes"; a: `[${Join<Acc>}]`; b: `[${Join<Next>}]` }>
      : J extends Shape
        ? StackAgree<J, R, Ctx>
        : never
    : never
  : Acc;
type InsertAt<S extends Shape, At extends number, D extends Dim, Acc extends Dim[] = []> = Acc["length"] extends At
  ? [...Acc, D, ...S]
  : S extends readonly [infer H extends Dim, ...infer R extends Shape]
    ? InsertAt<R, At, D, [...Acc, H]>
    : [...Acc, D];

/** expandDims: a unit dim inserted at an axis in [-(rank+1), rank]. */
export type ExpandDims<S extends Shape, Axis extends number, Ctx extends OpContext> = IsTuple<S> extends false
  ? Dim[]
  : InsertDim<S, Axis, 1, Ctx>;

/** A new dim D inserted at an axis in [-(rank+1), rank] (expandDims, stack). */
type InsertDim<S extends Shape, Axis extends number, D extends Dim, Ctx extends OpContext> =
  NormalizeAxis<Axis, [...S, 0]["length"]> extends infer N
    ? N extends "fail"
      ? AxisFail<Axis, Ctx, S>
      : number extends N
        ? Dim[]
        : InsertAt<S, N & number, D>
    : never;

/** slice(begin, size): one begin and size per axis; size -1 takes the rest of the axis. */
export type Slice<S extends Shape, Begin extends readonly number[], Size extends readonly number[], Ctx extends OpContext> =
  IsTuple<S> extends false
    ? Dim[]
    : Begin["length"] extends S["length"]
      ? Size["length"] extends S["length"]
        ? [SliceOutside<S, Begin, Size>] extends [never]
          ? { -readonly [K in keyof S]: SliceDim<S[K], Begin[K & keyof Begin], Size[K & keyof Size]> }
          : AxisFail<SliceOutside<S, Begin, Size>, Ctx, S>
        : AxisFail<Size["length"], Ctx, S>
      : AxisFail<Begin["length"], Ctx, S>;

/** The first axis whose block leaves its dim (as the runtime's FT204), or never. Named and unknown dims pass: the runtime checks them. */
type SliceOutside<S extends Shape, Begin extends readonly number[], Size extends readonly number[], I extends 0[] = []> = I["length"] extends S["length"]
  ? never
  : SliceFits<S[I["length"]], Begin[I["length"]], Size[I["length"]]> extends true
    ? SliceOutside<S, Begin, Size, [...I, 0]>
    : I["length"];
type SliceFits<D, B, Size> = D extends number
  ? B extends number
    ? Size extends number
      ? IsUnknownDim<D> extends true
        ? true
        : number extends B | Size
          ? true
          : `${B}` extends `-${string}`
            ? false
            : Size extends -1
              ? NotNegative<SubDigits<ToDigits<D>, ToDigits<B>>>
              : `${Size}` extends `-${string}`
                ? false
                : NotNegative<SubDigits<ToDigits<D>, AddDigits<ToDigits<B>, ToDigits<Size>>>>
      : true
    : true
  : true;
type NotNegative<R> = [R] extends [never] ? false : true;
type SliceDim<D, B, Size> = Size extends -1
  ? D extends number
    ? B extends number
      ? IsUnknownDim<D> extends true
        ? number
        : number extends B
          ? number
          : SubDigits<ToDigits<D>, ToDigits<B>> extends infer R
            ? [R] extends [never]
              ? number
              : R extends Digits
                ? FromDigits<R>
                : number
            : never
      : number
    : number
  : Size;

/** Output size of a convolution or pooling window along one spatial dim. */
export type WindowDim<D, K, Stride, Padding> = D extends number
  ? IsUnknownDim<D> extends true
    ? number
    : Stride extends Digit
      ? Stride extends 0
        ? number
        : Padding extends "same"
          ? FromDigits<CeilDivDigit<ToDigits<D>, Stride>>
          : K extends number
            ? SubDigits<ToDigits<D>, ToDigits<K>> extends infer R
              ? [R] extends [never]
                ? number
                : R extends Digits
                  ? FromDigits<CeilDivDigit<AddDigits<R, [1]>, Stride>>
                  : number
              : never
            : number
      : number
  : number;
