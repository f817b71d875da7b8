/**
 * Standard normal float32 values from random words, the same bits on every backend.
 *
 * The inverse CDF (Wichura's AS 241, single precision) of the uniform
 * p = (m + 0.5) 2^-23 in the open interval (0, 1), m the top 23 bits of a word. Transcendental
 * kernels differ between backends in their last bits (onnxruntime's Log and tfjs's disagree
 * on about 1 in 1,000 tail values), so the algorithm uses only operations IEEE 754 rounds
 * correctly, which every backend computes alike in float32: +, -, *, /, sqrt, min, compare
 * and select. The tails' log(p) is built from them: p's power of two comes from comparisons
 * with constants (exact), the rest from the atanh series of log on [1/sqrt2, sqrt2).
 *
 * The algorithm is written once, over an interface of those operations: the reference
 * interpreter and the tfjs kernels run it on JavaScript numbers rounded to float32 after
 * every operation; the ONNX lowering runs it on value names, emitting one float32 node per
 * operation, in the same order.
 */

/** The float32 operations the algorithm is written in: T a float32 value, B a bool. */
export interface Float32Ops<T, B> {
  constant(value: number): T;
  add(a: T, b: T): T;
  sub(a: T, b: T): T;
  mul(a: T, b: T): T;
  div(a: T, b: T): T;
  sqrt(a: T): T;
  min(a: T, b: T): T;
  lessEqual(a: T, b: T): B;
  where(condition: B, a: T, b: T): T;
}

// Wichura's AS 241 PPND7, the single-precision normal quantile (about 1e-7 relative): its
// central rational is in r = 0.180625 - q^2 and its tail in sqrt(-log p) - 1.6, both well
// conditioned in float32 (Acklam's double-precision central rational loses 3e-4 there).
const CENTRAL_NUM = [5.910937472e1, 1.5929113202e2, 5.0434271938e1, 3.3871327179];
const CENTRAL_DEN = [6.71875636e1, 7.8757757664e1, 1.7895169469e1, 1];
const TAIL_NUM = [1.7023821103e-1, 1.3067284816, 2.75681539, 1.4234372777];
const TAIL_DEN = [1.2021132975e-1, 7.370016425e-1, 1];
/** PPND7's central region: |p - 0.5| <= 0.425, compared as (p - 0.5)^2. */
const CENTRAL_LIMIT = 0.425 ** 2;
/** 2 atanh(s) = log((1 + s) / (1 - s)) = 2 s (1 + s^2/3 + s^4/5 + ...): enough terms for |s| <= 0.172. */
const ATANH_SERIES = [1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1];
const TOP = 2 ** 23;

function horner<T, B>(o: Float32Ops<T, B>, coefficients: readonly number[], x: T): T {
  let acc = o.constant(coefficients[0]!);
  for (const c of coefficients.slice(1)) acc = o.add(o.mul(acc, x), o.constant(c));
  return acc;
}

/**
 * log(y 2^e) for y in [0.5, 2^22], y = (integer + 0.5): y = 2^k y' with y' near
 * [1/sqrt2, sqrt2), so the result is 2 atanh((y'-1)/(y'+1)) + (k + e) log 2.
 */
function logOfHalfInteger<T, B>(o: Float32Ops<T, B>, y: T, e: number): T {
  const [one, half, two] = [o.constant(1), o.constant(0.5), o.constant(2)];
  let k = o.constant(0);
  let scaled = y;
  // Each threshold y >= 2^(j - 1/2) halves once more (exact) and counts one power of two.
  for (let j = 1; j <= 22; j++) {
    const above = o.lessEqual(o.constant(2 ** (j - 0.5)), y);
    scaled = o.mul(scaled, o.where(above, half, one));
    k = o.add(k, o.where(above, one, o.constant(0)));
  }
  const below = o.lessEqual(y, o.constant(Math.SQRT1_2));
  scaled = o.mul(scaled, o.where(below, two, one));
  k = o.sub(k, o.where(below, one, o.constant(0)));
  const s = o.div(o.sub(scaled, one), o.add(scaled, one));
  const series = o.mul(o.mul(two, s), horner(o, ATANH_SERIES, o.mul(s, s)));
  return o.add(series, o.mul(o.add(k, o.constant(e)), o.constant(Math.LN2)));
}

/** The standard normal value of the 23-bit integer m (given as a float32, exact). */
export function normalFromMantissa<T, B>(o: Float32Ops<T, B>, m: T): T {
  const half = o.constant(0.5);
  const p = o.mul(o.add(m, half), o.constant(2 ** -23));
  const q = o.sub(p, half);
  const r = o.mul(q, q);
  const centralR = o.sub(o.constant(CENTRAL_LIMIT), r);
  const central = o.div(o.mul(q, horner(o, CENTRAL_NUM, centralR)), horner(o, CENTRAL_DEN, centralR));
  // Tails by symmetry: p' = (min(m, 2^23 - 1 - m) + 0.5) 2^-23 >= 2^-24, so sqrt(-log p') < 5
  // and PPND7's first tail rational covers every draw.
  const nearer = o.add(o.min(m, o.sub(o.constant(TOP - 1), m)), half);
  const t = o.sub(o.sqrt(o.mul(logOfHalfInteger(o, nearer, -23), o.constant(-1))), o.constant(1.6));
  const upper = o.div(horner(o, TAIL_NUM, t), horner(o, TAIL_DEN, t));
  const tail = o.where(o.lessEqual(p, half), o.mul(upper, o.constant(-1)), upper);
  return o.where(o.lessEqual(r, o.constant(CENTRAL_LIMIT)), central, tail);
}

const f = Math.fround;
/** The operations on JavaScript numbers, rounded to float32 after each (as float32 hardware does). */
const float32Numbers: Float32Ops<number, boolean> = {
  constant: f,
  add: (a, b) => f(a + b),
  sub: (a, b) => f(a - b),
  mul: (a, b) => f(a * b),
  div: (a, b) => f(a / b),
  sqrt: (a) => f(Math.sqrt(a)),
  min: (a, b) => Math.min(a, b),
  lessEqual: (a, b) => a <= b,
  where: (c, a, b) => (c ? a : b),
};

/** Standard normal float32 values of random words (their top 23 bits). */
export function normalsFromWords(words: ArrayLike<number>): Float32Array {
  return Float32Array.from(words, (w) => normalFromMantissa(float32Numbers, (w >>> 9) * 1));
}
