/**
 * The discrete Gaussian N_Z(0, sigma^2) on the integers, P(k) proportional to
 * exp(-k^2 / (2 sigma^2)) (Canonne, Kamath and Steinke 2020), sampled by an alias table
 * (Walker 1977, Vose 1991) built in exact integer arithmetic, so that one draw is five random
 * 32-bit words and a fixed number of comparisons: the same in a traced graph (every backend,
 * src/front/distributed-dp.ts) and on plain arrays (src/lib/privacy/distributed-dp-codec.ts).
 *
 * A draw: column j = w0 mod L (L a power of two), u = (w1, w2, w3, w4) a 128-bit unsigned
 * number (w1 the most significant); the draw is value[j] when u < threshold[j], else alias[j].
 * The table's weights are integers summing exactly to L 2^128, so the sampled law P^ is exact
 * for them; its distance to N_Z(0, sigma^2) comes from three places, all bounded here:
 * - truncation to [-T, T], T the least with tail mass below 2^-96 (`tailMass`);
 * - float64 evaluation of exp(-k^2 / 2 sigma^2) and its normalization: a relative error of at
 *   most 2^-44 per kept point (argument error below 2^-52 |k^2 / 2 sigma^2| <= 2^-45 for
 *   points above the tail, exp within one ulp; the sum's error is spread proportionally);
 * - rounding to integers: below 2^-60 relative for the points of weight >= 2^60, the rest
 *   (smaller than 2^-68 each) counted in total variation.
 * So P^(k) / P(k) is within 1 +- `relativeError` on [-T, T] and P^ is within `totalVariation`
 * of P elsewhere; src/lib/privacy/distributed-dp.ts turns both into the accounted epsilon and
 * delta. Nothing here uses node:*: it runs in a browser too.
 */
import { ftError } from "../errors/error.js";

/** Random words one draw takes: one for the column, four for the 128-bit threshold. */
export const DISCRETE_GAUSSIAN_WORDS = 5;
/** The largest sigma a table is built for (its size grows as 24 sigma). */
export const MAX_TABLE_SIGMA = 2 ** 16;
const TAIL_LOG2 = -96;
/** The relative error of the float64 weights (see the header). */
const FLOAT_RELATIVE_ERROR = 2 ** -44;

/**
 * What any table's draws are within, whatever sigma: the ratio error, and the total variation
 * (the 2^-96 tail plus the lightest points, each of weight < 2^60 out of at least 2^128 and
 * fewer than 2^21 of them: below 2^-100). The accounting uses these.
 */
export const DISCRETE_GAUSSIAN_SAMPLER_ERROR = { relativeError: FLOAT_RELATIVE_ERROR + 2 ** -60, totalVariation: 2 ** -95 } as const;

export interface DiscreteGaussianTable {
  readonly sigma: number;
  /** Columns, a power of two. */
  readonly size: number;
  /** The value drawn below the threshold, per column. */
  readonly value: Int32Array;
  /** The value drawn at or above it. */
  readonly alias: Int32Array;
  /**
   * Thresholds, four words per column (most significant first), each stored as the unsigned
   * word minus 2^31: signed comparison of stored words is unsigned comparison of the words.
   */
  readonly threshold: Int32Array;
  /** Mass of N_Z(0, sigma^2) beyond [-T, T] (an upper bound). */
  readonly tailMass: number;
  /** P^(k) / P(k) within 1 +- this for the kept points of weight >= 2^60. */
  readonly relativeError: number;
  /** Total variation between P^ and P outside that: the tail and the lightest points. */
  readonly totalVariation: number;
}

const TWO_128 = 1n << 128n;

/** The least T whose two tails beyond it hold less than 2^-96 of the mass. */
function truncation(sigma: number, z: number): { t: number; tail: number } {
  const s2 = 2 * sigma * sigma;
  for (let t = Math.ceil(sigma); ; t++) {
    // Terms beyond T fall by a factor at most exp(-(2T + 3) / 2 sigma^2) each: a geometric bound.
    const first = Math.exp(-((t + 1) * (t + 1)) / s2);
    const tail = (2 * first) / z / (1 - Math.exp(-(2 * t + 3) / s2));
    if (tail < 2 ** TAIL_LOG2) return { t, tail };
  }
}

/**
 * The tables built last, by sigma: a table is a pure function of sigma, and one with sigma
 * 5e4 takes seconds of BigInt arithmetic, which every trace of the same program (a worker's
 * chunks, a resumed run, a served client's rounds) would otherwise repeat. A few are kept: the
 * largest is tens of megabytes.
 */
const recentTables = new Map<number, DiscreteGaussianTable>();
const RECENT_TABLES = 4;

/** The alias table of N_Z(0, sigma^2), 1/2 <= sigma <= MAX_TABLE_SIGMA. */
export function discreteGaussianTable(sigma: number): DiscreteGaussianTable {
  if (!(sigma >= 0.5 && sigma <= MAX_TABLE_SIGMA)) throw ftError("FT346", { why: `each client's discrete Gaussian would have sigma ${sigma}, outside the sampler's [0.5, ${MAX_TABLE_SIGMA}] integer steps: lower bits` });
  const known = recentTables.get(sigma);
  if (known !== undefined) return known;
  const table = buildTable(sigma);
  if (recentTables.size >= RECENT_TABLES) recentTables.delete(recentTables.keys().next().value!);
  recentTables.set(sigma, table);
  return table;
}

function buildTable(sigma: number): DiscreteGaussianTable {
  const s2 = 2 * sigma * sigma;
  // The normalizer over all integers, smallest terms first; far beyond T the terms are below float64's reach.
  const far = Math.ceil(sigma * 40) + 2;
  let z = 0;
  for (let k = far; k >= 1; k--) z += 2 * Math.exp(-(k * k) / s2);
  z += 1;
  const { t, tail } = truncation(sigma, z);
  const kept = 2 * t + 1;
  let size = 1;
  while (size < kept) size *= 2;
  const total = BigInt(size) * TWO_128;
  const scale = Number(total) / z;
  // Float weights as integers, then scaled exactly so that they sum to `total`.
  const raw: bigint[] = Array.from({ length: kept }, (_, i) => BigInt(Math.round(Math.exp(-((i - t) * (i - t)) / s2) * scale)));
  const rawSum = raw.reduce((a, b) => a + b, 0n);
  const weights = raw.map((w) => (w * total) / rawSum);
  let left = total - weights.reduce((a, b) => a + b, 0n);
  for (let i = 0; left > 0n; i = (i + 1) % kept, left--) weights[(t + (i % 2 === 0 ? i / 2 : -(i + 1) / 2) + kept) % kept]! += 1n;
  const heavy = 1n << 60n;
  let lightError = 0;
  for (const w of weights) if (w < heavy) lightError += (Number(w) * FLOAT_RELATIVE_ERROR + 2) / Number(total);

  // Vose's alias method on integer weights, each column holding capacity 2^128. Columns are
  // typed arrays and one BigInt each, not objects: a table has up to 2^21 of them.
  const value = new Int32Array(size);
  const alias = new Int32Array(size);
  const weight: bigint[] = new Array<bigint>(size);
  for (let i = 0; i < size; i++) {
    value[i] = i < kept ? i - t : 0;
    weight[i] = i < kept ? weights[i]! : 0n;
  }
  const small: number[] = [];
  const large: number[] = [];
  for (let i = 0; i < size; i++) (weight[i]! < TWO_128 ? small : large).push(i);
  while (small.length > 0 && large.length > 0) {
    const s = small.pop()!;
    const l = large.pop()!;
    alias[s] = value[l]!;
    weight[l] = weight[l]! - (TWO_128 - weight[s]!);
    (weight[l]! < TWO_128 ? small : large).push(l);
  }
  // Whatever remains is full (exactly 2^128, as the weights sum to size 2^128).
  for (const i of [...small, ...large]) weight[i] = TWO_128;

  const threshold = new Int32Array(4 * size);
  // A threshold's four words through one 128-bit split: two 64-bit halves, read as 32-bit words
  // (little-endian, as every platform Node and browsers run on is).
  const halves = new BigUint64Array(2);
  const words = new Uint32Array(halves.buffer);
  for (let i = 0; i < size; i++) {
    // A full column always gives its value, an empty one its alias: made equal, any threshold works.
    let w = weight[i]!;
    if (w >= TWO_128) [w, alias[i]] = [TWO_128 - 1n, value[i]!];
    if (w === 0n) value[i] = alias[i]!;
    halves[0] = w >> 64n;
    halves[1] = BigInt.asUintN(64, w);
    threshold[4 * i] = words[1]! - 2 ** 31;
    threshold[4 * i + 1] = words[0]! - 2 ** 31;
    threshold[4 * i + 2] = words[3]! - 2 ** 31;
    threshold[4 * i + 3] = words[2]! - 2 ** 31;
  }
  return { sigma, size, value, alias, threshold, tailMass: tail, relativeError: DISCRETE_GAUSSIAN_SAMPLER_ERROR.relativeError, totalVariation: tail + lightError };
}

/** A draw from five words (signed int32, as random bits are), as the traced sampler computes it. */
export function discreteGaussianOfWords(table: DiscreteGaussianTable, w: ArrayLike<number>, at = 0): number {
  const column = w[at]! & (table.size - 1);
  for (let word = 0; word < 4; word++) {
    // The word's unsigned value minus 2^31, compared with the stored threshold word.
    const u = (w[at + 1 + word]! ^ 0x80000000) | 0;
    const t = table.threshold[4 * column + word]!;
    if (u < t) return table.value[column]!;
    if (u > t) return table.alias[column]!;
  }
  return table.alias[column]!;
}

/** The exact law of the table's draws: probability per value in [-T, T] (for tests and audits). */
export function tableProbabilities(table: DiscreteGaussianTable): Map<number, number> {
  const out = new Map<number, number>();
  const add = (k: number, p: number) => out.set(k, (out.get(k) ?? 0) + p);
  for (let i = 0; i < table.size; i++) {
    let w = 0n;
    for (let word = 0; word < 4; word++) w = (w << 32n) | BigInt(table.threshold[4 * i + word]! + 2 ** 31);
    const below = Number(w) / Number(TWO_128);
    add(table.value[i]!, below / table.size);
    add(table.alias[i]!, (1 - below) / table.size);
  }
  return out;
}

/** N_Z(0, sigma^2)'s probabilities on [-t, t] computed directly in float64 (an independent reference). */
export function discreteGaussianPmf(sigma: number, t: number): Map<number, number> {
  const s2 = 2 * sigma * sigma;
  let z = 1;
  for (let k = Math.ceil(sigma * 40) + 2; k >= 1; k--) z += 2 * Math.exp(-(k * k) / s2);
  const out = new Map<number, number>();
  for (let k = -t; k <= t; k++) out.set(k, Math.exp(-(k * k) / s2) / z);
  return out;
}
