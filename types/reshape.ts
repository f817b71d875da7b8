/**
 * reshape() at type level: the element counts of source and target must be equal.
 *
 * A count is a product of literal dims (exact, by digit arithmetic, so dims up to 10^9 and
 * products far beyond are compared exactly) times a multiset of named dims. A dim that is
 * unknown until run time makes the count unknown, and the check moves to run time.
 * One target dim may be -1: it becomes the named dim or 1 that balances the counts when that is
 * evident (`[B,784]` to `[-1,28,28,1]` gives `[B,28,28,1]`), and `number` otherwise.
 */
import type { DigitString, Digits, MulDigits, ToDigits } from "./digits.js";
import type { FailWith } from "./errors.js";
import type { OpContext, IsUnknownDim } from "./shape.js";
import type { PrintOperand } from "./print.js";
import type { Dim, Shape } from "./tensor.js";

interface Count {
  readonly literal: Digits;
  readonly names: readonly string[];
}

/** The element count of a shape, "unknown" when a dim is unknown, "hole" marks a -1. */
type CountOf<S extends Shape, Lit extends Digits = [1], Names extends string[] = [], Holes extends 0[] = []> = S extends readonly [
  infer H extends Dim,
  ...infer R extends Shape,
]
  ? IsUnknownDim<H> extends true
    ? "unknown"
    : H extends -1
      ? CountOf<R, Lit, Names, [...Holes, 0]>
      : H extends string
        ? CountOf<R, Lit, [...Names, H], Holes>
        : ToDigits<H & number> extends infer D extends Digits
          ? [D] extends [never]
            ? "unknown"
            : CountOf<R, MulDigits<Lit, D>, Names, Holes>
          : "unknown"
  : { literal: Lit; names: Names; holes: Holes["length"] };

/** Names of A left after removing one occurrence of each name of B, or "extra" when B has more. */
type RemoveNames<A extends readonly string[], B extends readonly string[]> = B extends readonly [
  infer H extends string,
  ...infer R extends readonly string[],
]
  ? RemoveOne<A, H> extends infer Left
    ? Left extends "missing"
      ? "extra"
      : Left extends readonly string[]
        ? RemoveNames<Left, R>
        : never
    : never
  : A;
type RemoveOne<A extends readonly string[], N extends string, Before extends string[] = []> = A extends readonly [
  infer H extends string,
  ...infer R extends readonly string[],
]
  ? [H] extends [N]
    ? [...Before, ...R]
    : RemoveOne<R, N, [...Before, H]>
  : "missing";

type PrintCount<C extends Count> = C["names"] extends readonly []
  ? DigitString<C["literal"]>
  : DigitString<C["literal"]> extends "1"
    ? JoinNames<C["names"]>
    : `${DigitString<C["literal"]>}*${JoinNames<C["names"]>}`;
type JoinNames<N extends readonly string[], Acc extends string = ""> = N extends readonly [
  infer H extends string,
  ...infer R extends readonly string[],
]
  ? JoinNames<R, Acc extends "" ? H : `${Acc}*${H}`>
  : Acc;

type Mismatch<Ctx extends OpContext, From extends Count, To extends Count> = FailWith<
  "FT203",
  { a: PrintOperand<Ctx["a"]>; b: PrintOperand<Ctx["b"]>; na: PrintCount<From>; nb: PrintCount<To> }
>;

export type Reshape<From extends Shape, To extends Shape, Ctx extends OpContext> = number extends To["length"]
  ? Dim[]
  : number extends From["length"]
    ? HolesToUnknown<To>
    : CountOf<From> extends infer CF
      ? CountOf<To> extends infer CT
        ? CF extends Count
          ? CT extends Count & { holes: infer Holes }
            ? Holes extends 0
              ? SameCount<CF, CT> extends true
                ? To
                : Mismatch<Ctx, CF, CT>
              : Holes extends 1
                ? FillHole<To, CF, CT>
                : HolesToUnknown<To>
            : HolesToUnknown<To>
          : HolesToUnknown<To>
        : never
      : never;

type SameCount<A extends Count, B extends Count> = [A["literal"]] extends [B["literal"]]
  ? [B["literal"]] extends [A["literal"]]
    ? RemoveNames<A["names"], B["names"]> extends readonly []
      ? true
      : false
    : false
  : false;

/** Value of the -1 dim when evident: equal literal parts and at most one leftover name. */
type FillHole<To extends Shape, From extends Count, Known extends Count> = [From["literal"]] extends [Known["literal"]]
  ? [Known["literal"]] extends [From["literal"]]
    ? RemoveNames<From["names"], Known["names"]> extends infer Left
      ? Left extends readonly []
        ? ReplaceHole<To, 1>
        : Left extends readonly [infer Name extends string]
          ? ReplaceHole<To, Name>
          : HolesToUnknown<To>
      : never
    : HolesToUnknown<To>
  : HolesToUnknown<To>;

type ReplaceHole<To extends Shape, D extends Dim> = { -readonly [K in keyof To]: To[K] extends -1 ? D : To[K] };
type HolesToUnknown<To extends Shape> = { -readonly [K in keyof To]: To[K] extends -1 ? number : To[K] };
