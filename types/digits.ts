/**
 * Exact non-negative integer arithmetic at type level, on decimal digits.
 *
 * Dims reach 10^9 and element counts multiply several dims, so tuple-length arithmetic
 * (which builds a tuple as long as the number) is out of the question: it fails with
 * TS2589/TS2799 long before that. Here a number is a tuple of its decimal digits, least
 * significant first (`784` is `[4, 8, 7]`), and every operation walks the digits with small
 * lookup tables, so the cost grows with the number of digits, not the value.
 *
 * All recursions are tail calls with accumulators, which TypeScript evaluates iteratively.
 */

export type Digit = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;
/** A natural number as decimal digits, least significant first, without leading zeros (0 is []). */
export type Digits = readonly Digit[];

type Units<N extends number, Acc extends 0[] = []> = Acc["length"] extends N ? Acc : Units<N, [...Acc, 0]>;
type RepeatUnits<N extends number, Times extends number, Acc extends 0[] = [], Count extends 0[] = []> =
  Count["length"] extends Times
    ? Acc
    : Units<N> extends infer U extends 0[]
      ? RepeatUnits<N, Times, [...Acc, ...U], [...Count, 0]>
      : never;

/** [low digit, high digit] of a number below 100 built from a tuple length. */
type SplitTens<N> = `${N & number}` extends `${infer Hi extends Digit}${infer Lo extends Digit}`
  ? [Lo, Hi]
  : [N & Digit, 0];

// Lookup tables, computed once per program by the checker (type aliases are cached).
type SumTable = { [A in Digit]: { [B in Digit]: SplitTens<[...Units<A>, ...Units<B>]["length"]> } };
type SumCarryTable = { [A in Digit]: { [B in Digit]: SplitTens<[...Units<A>, ...Units<B>, 0]["length"]> } };
type ProductTable = { [A in Digit]: { [B in Digit]: SplitTens<Len<RepeatUnits<A, B>>> } };
type Len<T> = T extends readonly unknown[] ? T["length"] : never;
/** a - b - borrow as [digit, borrow out]. */
type DiffTable<Borrow extends 0 | 1> = {
  [A in Digit]: { [B in Digit]: SubDigit<[...Units<A>, ...Units<10>], [...Units<B>, ...Units<Borrow>]> };
};
type SubDigit<A, B extends readonly unknown[]> = A extends [...B, ...infer R extends 0[]]
  ? R["length"] extends infer D extends Digit
    ? [D, 1]
    : [SplitTens<R["length"]>[0], 0]
  : never;

type CharDigit = { "0": 0; "1": 1; "2": 2; "3": 3; "4": 4; "5": 5; "6": 6; "7": 7; "8": 8; "9": 9 };

/** Digits of a non-negative integer literal; `never` for anything else (negative, fractional, exponent form). */
export type ToDigits<N extends number | string, Acc extends Digit[] = []> = `${N}` extends `${infer C}${infer Rest}`
  ? C extends keyof CharDigit
    ? ToDigits<Rest, [CharDigit[C], ...Acc]>
    : never
  : Trim<Acc>;

export type DigitString<D extends Digits, Acc extends string = ""> = D extends readonly [
  infer H extends Digit,
  ...infer R extends Digits,
]
  ? DigitString<R, `${H}${Acc}`>
  : Acc extends ""
    ? "0"
    : Acc;

export type FromDigits<D extends Digits> = DigitString<D> extends `${infer N extends number}` ? N : never;

/** Drops leading zeros (trailing in this order). */
type Trim<D extends Digits> = D extends readonly [...infer R extends Digits, 0] ? Trim<R> : D;

export type AddDigits<A extends Digits, B extends Digits, Carry extends 0 | 1 = 0, Acc extends Digit[] = []> =
  A extends readonly [infer a extends Digit, ...infer RA extends Digits]
    ? B extends readonly [infer b extends Digit, ...infer RB extends Digits]
      ? AddStep<RA, RB, (Carry extends 1 ? SumCarryTable : SumTable)[a][b], Acc>
      : AddStep<RA, [], (Carry extends 1 ? SumCarryTable : SumTable)[a][0], Acc>
    : B extends readonly [infer b extends Digit, ...infer RB extends Digits]
      ? AddStep<[], RB, (Carry extends 1 ? SumCarryTable : SumTable)[0][b], Acc>
      : Carry extends 1
        ? [...Acc, 1]
        : Acc;
type AddStep<A extends Digits, B extends Digits, S extends [Digit, Digit], Acc extends Digit[]> = AddDigits<
  A,
  B,
  S[1] & (0 | 1),
  [...Acc, S[0]]
>;

/** A - B, or `never` when B > A. */
export type SubDigits<A extends Digits, B extends Digits, Borrow extends 0 | 1 = 0, Acc extends Digit[] = []> =
  A extends readonly [infer a extends Digit, ...infer RA extends Digits]
    ? B extends readonly [infer b extends Digit, ...infer RB extends Digits]
      ? SubStep<RA, RB, DiffTable<Borrow>[a][b], Acc>
      : SubStep<RA, [], DiffTable<Borrow>[a][0], Acc>
    : B extends readonly []
      ? Borrow extends 0
        ? Trim<Acc>
        : never
      : never;
type SubStep<A extends Digits, B extends Digits, S extends [Digit, 0 | 1], Acc extends Digit[]> = SubDigits<
  A,
  B,
  S[1],
  [...Acc, S[0]]
>;

/** A times one digit. */
type MulDigit<A extends Digits, M extends Digit, Carry extends Digit = 0, Acc extends Digit[] = []> = A extends readonly [
  infer a extends Digit,
  ...infer RA extends Digits,
]
  ? MulDigitStep<RA, M, ProductTable[a][M], Acc, Carry>
  : Carry extends 0
    ? Acc
    : [...Acc, Carry];
type MulDigitStep<
  RA extends Digits,
  M extends Digit,
  P extends [Digit, Digit],
  Acc extends Digit[],
  Carry extends Digit,
> = SumTable[P[0]][Carry] extends [infer Lo extends Digit, infer C extends Digit]
  ? MulDigit<RA, M, SumTable[P[1]][C][0], [...Acc, Lo]>
  : never;

export type MulDigits<A extends Digits, B extends Digits, Shift extends 0[] = [], Acc extends Digits = []> =
  B extends readonly [infer b extends Digit, ...infer RB extends Digits]
    ? MulDigits<A, RB, [...Shift, 0], AddDigits<Acc, Trim<[...Shift, ...MulDigit<A, b>]>>>
    : Trim<Acc>;

/** Product of a list of digit numbers. */
export type ProductDigits<Ns extends readonly Digits[], Acc extends Digits = [1]> = Ns extends readonly [
  infer H extends Digits,
  ...infer R extends readonly Digits[],
]
  ? ProductDigits<R, MulDigits<Acc, H>>
  : Acc;

/** ceil(A / D) for a one-digit divisor D >= 1, by long division from the most significant digit. */
export type CeilDivDigit<A extends Digits, D extends Digit> = DivDigit<Reverse<A>, Units<D>, 0, []>;
type DivDigit<MostFirst extends Digits, D extends 0[], Rem extends number, Quotient extends Digit[]> =
  MostFirst extends readonly [infer a extends Digit, ...infer R extends Digits]
    ? DivideSmall<[...RepeatUnits<Rem, 10>, ...Units<a>], D> extends [infer Q extends Digit, infer NewRem extends number]
      ? DivDigit<R, D, NewRem, [Q, ...Quotient]>
      : never
    : Rem extends 0
      ? Trim<Quotient>
      : AddDigits<Trim<Quotient>, [1]>;
/** [floor(N / D), N mod D] for N < 10 D, by repeated subtraction of tuples. */
type DivideSmall<N, D extends 0[], Q extends 0[] = []> = N extends [...D, ...infer R extends 0[]]
  ? DivideSmall<R, D, [...Q, 0]>
  : [Q["length"], Len<N>];
type Reverse<A extends Digits, Acc extends Digit[] = []> = A extends readonly [
  infer H extends Digit,
  ...infer R extends Digits,
]
  ? Reverse<R, [H, ...Acc]>
  : Acc;
