/**
 * einsum() at type level: the equation is parsed as a template literal, so tsc computes the
 * result shape and reports a bad equation (FT212) or an index sized differently by two
 * operands (FT213) with the text src/front/einsum.ts throws when tracing.
 *
 * Supported: one or two operands, one letter (a-z, A-Z) per axis, each letter at most once per
 * term; the output after "->", or without it numpy's implicit output (the letters that occur
 * once, in alphabetical order, capitals first). Everything else is FT212 (see the catalogue).
 */
import type { FailWith } from "./errors.js";
import type { Print } from "./print.js";
import type { DimsAgree, IsTuple, IsUnknownDim } from "./shape.js";
import type { Dim, Shape, ShapeOf, Typed } from "./tensor.js";

type Lower = "a" | "b" | "c" | "d" | "e" | "f" | "g" | "h" | "i" | "j" | "k" | "l" | "m";
type Lower2 = "n" | "o" | "p" | "q" | "r" | "s" | "t" | "u" | "v" | "w" | "x" | "y" | "z";
type Letter = Lower | Lower2 | Uppercase<Lower | Lower2>;

/** The characters of a string, as a tuple. */
type Chars<S extends string, Acc extends string[] = []> = S extends `${infer C}${infer Rest}` ? Chars<Rest, [...Acc, C]> : Acc;
/** Comma-separated terms. */
type Terms<S extends string, Acc extends string[] = []> = S extends `${infer T},${infer Rest}` ? Terms<Rest, [...Acc, T]> : [...Acc, S];

type FirstNonLetter<Cs extends string[]> = Cs extends [infer C extends string, ...infer R extends string[]]
  ? C extends Letter
    ? FirstNonLetter<R>
    : C
  : never;
type FirstRepeated<Cs extends string[]> = Cs extends [infer C extends string, ...infer R extends string[]]
  ? C extends R[number]
    ? C
    : FirstRepeated<R>
  : never;

type Bad<E extends string, Why extends string> = FailWith<"FT212", { equation: E; why: Why }>;

/** What is wrong with one term (an operand's or the output's), or never. */
type TermProblem<E extends string, Term extends string, What extends string> = E extends `${string}...${string}`
  ? "uses '...': ellipsis is not supported, name every axis with a letter"
  : [FirstNonLetter<Chars<Term>>] extends [never]
    ? [FirstRepeated<Chars<Term>>] extends [never]
      ? never
      : `repeats index ${FirstRepeated<Chars<Term>>} in ${What}: diagonals and traces are not supported`
    : `has '${FirstNonLetter<Chars<Term>>}' in ${What}: indices are the letters a-z and A-Z`;

type OperandName<I extends number> = I extends 0 ? "the first operand" : "the second operand";

/** The first problem among the operand terms, their count and ranks, or never. */
type OperandsProblem<E extends string, Ts extends string[], Xs extends readonly Typed[], I extends 0[] = []> = I["length"] extends Ts["length"]
  ? never
  : TermProblem<E, Ts[I["length"]], OperandName<I["length"]>> extends infer P extends string
    ? [P] extends [never]
      ? RankProblem<Ts[I["length"]], Xs[I["length"]]> extends infer R extends string
        ? [R] extends [never]
          ? OperandsProblem<E, Ts, Xs, [...I, 0]>
          : R
        : never
      : P
    : never;
type RankProblem<Term extends string, X> = X extends Typed
  ? IsTuple<ShapeOf<X>> extends true
    ? Chars<Term>["length"] extends ShapeOf<X>["length"]
      ? never
      : `names ${Chars<Term>["length"]} axes '${Term}' for ${Print<X>} of rank ${ShapeOf<X>["length"]}`
    : never
  : never;

type Missing<Out extends string[], In extends string> = Out extends [infer C extends string, ...infer R extends string[]]
  ? C extends In
    ? Missing<R, In>
    : C
  : never;

/** The letters, in numpy's order for an implicit output (character codes: capitals first). */
type Alphabet = Chars<"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz">;
type Occurrences<Cs extends string[], C extends string, Acc extends 0[] = []> = Cs extends [infer H, ...infer R extends string[]]
  ? Occurrences<R, C, H extends C ? [...Acc, 0] : Acc>
  : Acc["length"];
/** The letters that occur once in Cs, in Alphabet's order: numpy's implicit output. */
type Once<Cs extends string[], Letters extends string[] = Alphabet, Acc extends string[] = []> = Letters extends [
  infer L extends string,
  ...infer R extends string[],
]
  ? Once<Cs, R, Occurrences<Cs, L> extends 1 ? [...Acc, L] : Acc>
  : Acc;

/** The equation's problem as FT212's "why", or never. */
type EquationProblem<E extends string, Xs extends readonly Typed[]> = E extends `${infer Lhs}->${infer Out}`
  ? Terms<Lhs> extends infer Ts extends string[]
    ? Ts["length"] extends 1 | 2
      ? Ts["length"] extends Xs["length"]
        ? OperandsProblem<E, Ts, Xs> extends infer P extends string
          ? [P] extends [never]
            ? TermProblem<E, Out, "the output"> extends infer O extends string
              ? [O] extends [never]
                ? [Missing<Chars<Out>, Chars<Ts[number]>[number]>] extends [never]
                  ? never
                  : `has output index ${Missing<Chars<Out>, Chars<Ts[number]>[number]>} that no operand has`
                : O
              : never
            : P
          : never
        : `has ${Ts["length"]} operand terms for ${Xs["length"]} operands`
      : `has ${Ts["length"]} operand terms: einsum() takes one or two operands`
    : never
  : never;

/** [index letter, dim] for each axis of a term. */
type Bind<Cs extends string[], S extends Shape, Acc extends [string, Dim][] = []> = Cs extends [infer C extends string, ...infer CR extends string[]]
  ? S extends readonly [infer D extends Dim, ...infer SR extends Shape]
    ? Bind<CR, SR, [...Acc, [C, D]]>
    : Acc
  : Acc;
type Lookup<Pairs extends [string, Dim][], C extends string> = Pairs extends [[infer K, infer D], ...infer R extends [string, Dim][]]
  ? [K] extends [C]
    ? D
    : Lookup<R, C>
  : undefined;

/** The first index whose dims in the two operands cannot be equal: FT213, or never. */
type DimMismatch<E extends string, PA extends [string, Dim][], PB extends [string, Dim][], A, B> = PB extends [
  [infer C extends string, infer DB extends Dim],
  ...infer R extends [string, Dim][],
]
  ? Lookup<PA, C> extends infer DA
    ? DA extends Dim
      ? DimsAgree<DA, DB> extends true
        ? DimMismatch<E, PA, R, A, B>
        : FailWith<"FT213", { equation: E; index: C; da: `${DA}`; db: `${DB}`; a: Print<A>; b: Print<B> }>
      : DimMismatch<E, PA, R, A, B>
    : never
  : never;

/** The output dims: each index's dim, from the operand that knows it. */
type OutputShape<Out extends string[], PA extends [string, Dim][], PB extends [string, Dim][]> = {
  [K in keyof Out]: Lookup<PA, Out[K]> extends infer DA
    ? DA extends Dim
      ? IsUnknownDim<DA> extends true
        ? Lookup<PB, Out[K]> extends infer DB extends Dim
          ? DB
          : DA
        : DA
      : Lookup<PB, Out[K]>
    : never;
};

type Operands<Xs extends readonly Typed[]> = Xs extends readonly [infer A extends Typed, infer B extends Typed]
  ? [A, B]
  : Xs extends readonly [infer A extends Typed]
    ? [A, A]
    : never;

/** The result shape of einsum(E, ...Xs), or a Fail with FT212 or FT213. */
export type EinsumShape<E extends string, Xs extends readonly Typed[]> = string extends E
  ? Dim[]
  : E extends `${infer Lhs}->${infer Out}`
    ? [EquationProblem<E, Xs>] extends [never]
      ? Contracted<E, Terms<Lhs>, Chars<Out>, Xs>
      : Bad<E, EquationProblem<E, Xs>>
    : // numpy's implicit output: the operands' terms checked as those of "E->", which has no output to check.
      [EquationProblem<`${E}->`, Xs>] extends [never]
      ? Contracted<E, Terms<E>, Once<Chars<E>>, Xs>
      : Bad<E, EquationProblem<`${E}->`, Xs>>;

/** The output dims of a checked equation, or FT213. */
type Contracted<E extends string, Ts extends string[], Out extends string[], Xs extends readonly Typed[]> =
  Operands<Xs> extends [infer A extends Typed, infer B extends Typed]
    ? IsTuple<ShapeOf<A>> extends true
      ? IsTuple<ShapeOf<B>> extends true
        ? Bind<Chars<Ts[0]>, ShapeOf<A>> extends infer PA extends [string, Dim][]
          ? Bind<Chars<Ts[Ts["length"] extends 2 ? 1 : 0]>, ShapeOf<B>> extends infer PB extends [string, Dim][]
            ? [DimMismatch<E, PA, PB, A, B>] extends [never]
              ? OutputShape<Out, PA, PB>
              : DimMismatch<E, PA, PB, A, B>
            : never
          : never
        : Dim[]
      : Dim[]
    : Dim[];
