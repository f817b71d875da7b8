/**
 * From floats to Z_M and back, as Flower's SecAgg+ does: clip to [-c, c], map to [0, Q] by
 * (x + c) Q / 2c with stochastic rounding (round up with probability equal to the fraction,
 * so E[q] is the exact scaled value and the rounding errors of n clients average out), and
 * after the modular sum S of n clients: S 2c / Q - n c.
 *
 * Arithmetic mod M (a power of two up to 2^32) is `x & (M - 1)` stored in a Uint32Array:
 * ToInt32 reduces an integer mod 2^32 exactly (for |x| < 2^53), the mask reduces it to M (for
 * M = 2^32 the mask is -1 and keeps every bit) and the store reads the bits as unsigned, so one
 * form serves every M, negative differences included.
 */
import { ftError } from "../../errors/error.js";
import type { ResolvedSecAggParams } from "./params.js";
import { type RandomBytes, coinWords } from "./random.js";

export interface Quantized {
  readonly values: Uint32Array;
  /** How many finite values lay outside [-c, c] and were clipped (reported, not silent). */
  readonly clipped: number;
}

/**
 * Clips and quantizes a client's vector. NaN and infinities are FT309: a diverged client's
 * update has no meaningful clip, and quantizing it would corrupt the sum unnoticed.
 */
export function quantizeVector(x: Float32Array, p: ResolvedSecAggParams, randomBytes: RandomBytes): Quantized {
  let nonFinite = 0;
  for (let i = 0; i < x.length; i++) if (!Number.isFinite(x[i]!)) nonFinite++;
  if (nonFinite > 0)
    throw ftError("FT309", { op: "SecAgg+ masked input", count: nonFinite, low: -p.clipping_range, high: p.clipping_range });
  const c = p.clipping_range;
  const scale = p.quantization_range / (2 * c);
  // Round up when coin / 2^32 < the fraction, compared as coin < fraction * 2^32 (exact in float64): no array of floats.
  const coins = coinWords(randomBytes, x.length);
  const values = new Uint32Array(x.length);
  let clipped = 0;
  for (let i = 0; i < x.length; i++) {
    let v = x[i]!;
    if (v < -c || v > c) {
      clipped++;
      v = v < -c ? -c : c;
    }
    const scaled = Math.min(p.quantization_range, (v + c) * scale);
    const floor = Math.floor(scaled);
    values[i] = Math.min(p.quantization_range, floor + (coins[i]! < (scaled - floor) * 2 ** 32 ? 1 : 0));
  }
  return { values, clipped };
}

/** The sum of `clients` quantized vectors back in float: S 2c / Q - n c. */
export function dequantizeSum(sum: Uint32Array, clients: number, p: ResolvedSecAggParams): Float64Array {
  const step = (2 * p.clipping_range) / p.quantization_range;
  const out = new Float64Array(sum.length);
  for (let i = 0; i < sum.length; i++) out[i] = sum[i]! * step - clients * p.clipping_range;
  return out;
}

/** The all-ones mask of M - 1 bits (M = 2^32 gives -1 under ToInt32, which keeps all 32). */
export const modMask = (modulus: number): number => modulus - 1;

/** into += sign * words (mod M), in place. */
export function addMod(into: Uint32Array, words: Uint32Array, sign: 1 | -1, modulus: number): void {
  const mask = modMask(modulus);
  if (sign === 1) for (let i = 0; i < into.length; i++) into[i] = (into[i]! + words[i]!) & mask;
  else for (let i = 0; i < into.length; i++) into[i] = (into[i]! - words[i]!) & mask;
}

/**
 * Where a sum of `clients` quantized inputs leaves [0, clients x Q], the range of honest inputs
 * (each word in [0, Q], and clients x Q < M, so an honest sum never wraps); undefined inside it.
 */
export function outsideHonestRange(sum: Uint32Array, clients: number, quantizationRange: number): string | undefined {
  const bound = clients * quantizationRange;
  let count = 0;
  let first = -1;
  for (let i = 0; i < sum.length; i++) {
    if (sum[i]! > bound) {
      if (first < 0) first = i;
      count++;
    }
  }
  return count === 0 ? undefined : `has ${count} of ${sum.length} coordinates above ${clients} x quantization_range = ${bound} (the first at ${first}: ${sum[first]})`;
}
