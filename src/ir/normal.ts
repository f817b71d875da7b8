/**
 * Standard normal float32 values from random words, the same bits on every backend, with
 * tails that reach 9.155 sigma and a stated distance from the exact normal.
 *
 * A value is the inverse CDF (Wichura's AS 241, single precision) of a 64-bit uniform: one
 * Threefry block, words (w0, w1). The top 23 bits m of w0 pick a cell of width 2^-23; the
 * central cells (|p - 0.5| <= 0.425) take its midpoint p = (m + 0.5) 2^-23, as a float32
 * holds it exactly. A tail cell is refined by the other 41 bits F: the distance to the
 * nearer end is p' = (n + (F + 0.5) 2^-41) 2^-23 with n = min(m, 2^23 - 1 - m), so p' runs
 * over the midpoints of a grid of width 2^-64 down to p' = 2^-65 (F has the same law read
 * forwards or mirrored, so both sides are exact). The sign is the side of m.
 *
 * The bound (docs/runtime.md, "Random numbers"). Couple the value with an exact Z ~ N(0, 1)
 * through U = Phi(Z): U's grid cell gives the words. Wherever U's cell is not one of the two
 * outermost (p' < 2^-64), the value lies in the z-interval of Z's own cell up to the
 * quantile's error and float32 rounding, 5e-7 max(1, |z|) (test/random/normal.test.ts): a
 * deterministic rounding of Z by a few float32 ulp. The rest, where the value stays at
 * +-9.155 whatever Z is, has probability 2 * 2^-64 = 2^-63: the total variation
 * `normalSamplerDeltaPerDraw` the accountant adds (see normalSamplerDelta for n draws).
 *
 * Transcendental kernels differ between backends in their last bits (onnxruntime's Log and
 * tfjs's disagree on about 1 in 1,000 tail values), so the algorithm uses only operations
 * IEEE 754 rounds correctly, which every backend computes alike in float32: +, -, *, /,
 * sqrt, min, compare and select. The words enter as bit fields of at most 24 bits, which a
 * float32 holds exactly; log(p') is built from comparisons with powers of two, exact
 * scalings and the atanh series of log on [1/sqrt2, sqrt2].
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
  /** where(condition, then(), otherwise()) where one side is long: numbers compute only the side they take, graphs both. */
  branch(condition: B, then: () => T, otherwise: () => T): T;
}

/** Random words a normal value consumes: one Threefry block, the last axis of normal_from_bits' input. */
export const NORMAL_WORDS_PER_VALUE = 2;

/**
 * The bit fields of a value's two words, (word >>> shift) mod 2^bits, each exact as a float32:
 * m (the cell), then the 41 bits F inside it, most significant first.
 */
export const NORMAL_FIELDS = [
  { word: 0, shift: 9, bits: 23 },
  { word: 0, shift: 0, bits: 9 },
  { word: 1, shift: 8, bits: 24 },
  { word: 1, shift: 0, bits: 8 },
] as const;

/**
 * Total variation between one draw and N(0, 1), beyond the deterministic rounding described
 * above: the probability 2 * 2^-64 of the two outermost cells, which the sampler cannot
 * resolve (|Z| > 9.08).
 */
export const normalSamplerDeltaPerDraw = 2 ** -63;

/**
 * What n draws add to a mechanism's delta at a given epsilon. Replacing the exact normals by
 * the sampler's, one draw at a time, moves each output distribution by at most
 * n * normalSamplerDeltaPerDraw in total variation; for a set S,
 * P[M(D) in S] <= P[M*(D) in S] + n d <= e^eps P[M*(D') in S] + delta + n d
 *              <= e^eps P[M(D') in S] + delta + (1 + e^eps) n d.
 */
export function normalSamplerDelta(draws: number, epsilon: number): number {
  return draws * normalSamplerDeltaPerDraw * (1 + Math.exp(epsilon));
}

// Wichura's AS 241 PPND7, the single-precision normal quantile (about 1e-7 relative): its
// central rational is in r = 0.180625 - q^2; its tail ones in sqrt(-log p') - 1.6 up to 5
// and in sqrt(-log p') - 5 beyond (p' < 1.4e-11), all well conditioned in float32.
const CENTRAL_NUM = [5.910937472e1, 1.5929113202e2, 5.0434271938e1, 3.3871327179];
const CENTRAL_DEN = [6.71875636e1, 7.8757757664e1, 1.7895169469e1, 1];
const TAIL_NUM = [1.7023821103e-1, 1.3067284816, 2.75681539, 1.4234372777];
const TAIL_DEN = [1.2021132975e-1, 7.370016425e-1, 1];
const FAR_NUM = [1.7337203997e-2, 4.2868294337e-1, 3.081226386, 6.657905115];
const FAR_DEN = [1.2258202635e-2, 2.4197894225e-1, 1];
/** PPND7's central region: |p - 0.5| <= 0.425, compared as (p - 0.5)^2. */
const CENTRAL_LIMIT = 0.425 ** 2;
/** Where PPND7 changes tail rationals: sqrt(-log p') = 5. */
const FAR_SPLIT = 5;
/** 2 atanh(s) = log((1 + s) / (1 - s)) = 2 s (1 + s^2/3 + s^4/5 + ...): enough terms for |s| <= 0.172. */
const ATANH_SERIES = [1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1];
const TOP = 2 ** 23;
/** Powers of two that scale y in [2^-63, 2^31] into [1/sqrt2, sqrt2], largest first (a binary search). */
const DOWN_STEPS = [16, 8, 4, 2, 1];
const UP_STEPS = [32, 16, 8, 4, 2, 1];

function horner<T, B>(o: Float32Ops<T, B>, coefficients: readonly number[], x: T): T {
  let acc = o.constant(coefficients[0]!);
  for (const c of coefficients.slice(1)) acc = o.add(o.mul(acc, x), o.constant(c));
  return acc;
}

/**
 * log(y 2^e) for y in [2^-63, 2^31]: y = 2^k y' with y' in [1/sqrt2, sqrt2] (each step
 * multiplies by a power of two, exact, when y is past that power's threshold), so the result
 * is 2 atanh((y'-1)/(y'+1)) + (k + e) log 2.
 */
function logScaled<T, B>(o: Float32Ops<T, B>, y: T, e: number): T {
  const [one, zero, two] = [o.constant(1), o.constant(0), o.constant(2)];
  let k = zero;
  let scaled = y;
  for (const s of DOWN_STEPS) {
    const above = o.lessEqual(o.constant(2 ** (s - 0.5)), scaled);
    scaled = o.mul(scaled, o.where(above, o.constant(2 ** -s), one));
    k = o.add(k, o.where(above, o.constant(s), zero));
  }
  for (const s of UP_STEPS) {
    const below = o.lessEqual(scaled, o.constant(2 ** (0.5 - s)));
    scaled = o.mul(scaled, o.where(below, o.constant(2 ** s), one));
    k = o.sub(k, o.where(below, o.constant(s), zero));
  }
  const s = o.div(o.sub(scaled, one), o.add(scaled, one));
  const series = o.mul(o.mul(two, s), horner(o, ATANH_SERIES, o.mul(s, s)));
  return o.add(series, o.mul(o.add(k, o.constant(e)), o.constant(Math.LN2)));
}

/**
 * The standard normal value of a block's bit fields (NORMAL_FIELDS, each given as a float32,
 * exact): m, then the 41 bits below it as b (9), c (24), d (8).
 */
export function normalFromFields<T, B>(o: Float32Ops<T, B>, fields: readonly [T, T, T, T]): T {
  const half = o.constant(0.5);
  const p = o.mul(o.add(fields[0], half), o.constant(2 ** -23));
  const q = o.sub(p, half);
  const r = o.mul(q, q);
  return o.branch(
    o.lessEqual(r, o.constant(CENTRAL_LIMIT)),
    () => {
      const centralR = o.sub(o.constant(CENTRAL_LIMIT), r);
      return o.div(o.mul(q, horner(o, CENTRAL_NUM, centralR)), horner(o, CENTRAL_DEN, centralR));
    },
    () => {
      const upper = upperTail(o, fields);
      return o.where(o.lessEqual(p, half), o.mul(upper, o.constant(-1)), upper);
    },
  );
}

/** The (positive) quantile of the nearer tail's probability p' of a tail cell refined by its 41 bits. */
function upperTail<T, B>(o: Float32Ops<T, B>, [m, b, c, d]: readonly [T, T, T, T]): T {
  const half = o.constant(0.5);
  // The position inside the cell, (F + 0.5) 2^-41 in (0, 1), summed from the lowest bits up:
  // each sum rounds once (relative error 2^-24), the scalings are exact.
  const lowWord = o.mul(o.add(c, o.mul(o.add(d, half), o.constant(2 ** -8))), o.constant(2 ** -24));
  const inCell = o.mul(o.add(b, lowWord), o.constant(2 ** -9));
  // The nearer tail by symmetry: p' = y 2^-23, y = min(m, 2^23 - 1 - m) + inCell in [2^-42, 2^22].
  const y = o.add(o.min(m, o.sub(o.constant(TOP - 1), m)), inCell);
  const root = o.sqrt(o.mul(logScaled(o, y, -23), o.constant(-1)));
  const rational = (num: readonly number[], den: readonly number[], t: T) => o.div(horner(o, num, t), horner(o, den, t));
  return o.branch(
    o.lessEqual(root, o.constant(FAR_SPLIT)),
    () => rational(TAIL_NUM, TAIL_DEN, o.sub(root, o.constant(1.6))),
    () => rational(FAR_NUM, FAR_DEN, o.sub(root, o.constant(FAR_SPLIT))),
  );
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
  branch: (c, a, b) => (c ? a() : b()),
};

/** The standard normal float32 value of one block (w0, w1), as int32 or uint32 words: NORMAL_FIELDS' cuts. */
export function normalOfBlock(w0: number, w1: number): number {
  return normalFromFields(float32Numbers, [w0 >>> 9, w0 & 0x1ff, w1 >>> 8, w1 & 0xff]);
}

/** Standard normal float32 values of random words, two a value (words 2i and 2i + 1 give value i). */
export function normalsFromWords(words: ArrayLike<number>): Float32Array {
  const out = new Float32Array(words.length / NORMAL_WORDS_PER_VALUE);
  for (let i = 0; i < out.length; i++) out[i] = normalOfBlock(words[2 * i]!, words[2 * i + 1]!);
  return out;
}
