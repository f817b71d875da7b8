/**
 * Secure summation (Bonawitz et al. 2017, "Practical Secure Aggregation for Privacy-Preserving
 * Machine Learning"; the k-neighbour mask graph of Bell et al. 2020, SecAgg+): the definition
 * every backend reproduces bit for bit. The reference interpreter and the tfjs kernels call
 * these functions; the ONNX lowering (src/lower/onnx/secure.ts) builds the same steps from
 * graph nodes.
 *
 * A secure sum of a CLIENTS value x over n clients, in the modulus M = 2^bits:
 * 1. Quantize: q = floor((x - low) * scale + 0.5) for float32 (each operation rounded to
 *    float32), q = x - low for int32; x outside [low, high] (or NaN) is counted and makes the
 *    run fail with FT309: nothing is clipped silently. q lies in [0, span], span = q(high).
 * 2. Mask: the clients are placed on a ring by a secret random permutation L derived from
 *    the key (ringLabels); client i adds, per ring distance d = 1..h, the words R(k(L_i, d))
 *    and subtracts R(k((L_i - d) mod n, d)), where k(a, d) = foldIn(foldIn(key, a), d) is the
 *    key of the labels' pair (a, a + d mod n) and R(k) its randomBits words reduced mod M. Every pair's words are added
 *    by one client and subtracted by the other, so they cancel in the modular sum, and each
 *    masked value y_i = (q_i + mask_i) mod M is uniform on [0, M) to whoever lacks the pair keys.
 *    h = floor(n / 2) pairs every client with every other (Bonawitz's complete graph, O(n^2)
 *    words per coordinate); a neighbour count k gives h = min(k / 2, floor(n / 2)), the
 *    Harary graph H(k, n) of SecAgg+ (O(n k)).
 * 3. Sum: S = sum_i y_i mod M = sum_i q_i (exact while n span < M: FT311 otherwise).
 * 4. Dequantize: S / scale + n low (float32, each operation rounded), S + n low (int32).
 *
 * Limits: bits <= 30, so that q + mask < 2^31 and every masked value is an exact int32 word on
 * every backend; sums of masked values are taken in int64 (onnx) or float64 (host), exact
 * for any cohort below 2^23 clients (n 2^30 < 2^53).
 */
import { ftError } from "../errors/error.js";
import { randomBits, threefry2x32 } from "./threefry.js";

export const MAX_SECURE_BITS = 30;

export interface SecureSumAttrs {
  readonly bits: number;
  /** Neighbours per client in the mask graph (even); null for every other client. */
  readonly neighbours: number | null;
  /** The declared range [low, high] and the quantization scale (1 for int32), float32 values. */
  readonly low: number;
  readonly high: number;
  readonly scale: number;
  /** The fewest clients a secure sum takes (FT112 below); absent in IR stored before it existed: the default. */
  readonly minClients?: number;
  /**
   * Set on the sum of one group of a streamed round (src/transform/mapreduce.ts): without a
   * neighbour count its masks use the SecAgg+ graph of the group (secAggPlusNeighbours), not
   * every other client.
   */
  readonly grouped?: boolean;
}

/**
 * The fewest clients a secure sum takes by default: with one client the sum is that client's
 * value. 2 is a floor, not a strong threshold: with two clients each learns the other's value
 * from the sum; raise it with secureSum's minClients option.
 */
export const DEFAULT_MIN_CLIENTS = 2;

export type SecureDType = "float32" | "int32";

/** A float32 (or int32) input's quantized value; NaN and values outside [low, high] are the caller's to count. */
export function quantize(x: number, dtype: SecureDType, a: SecureSumAttrs): number {
  if (dtype === "int32") return x - a.low;
  return Math.floor(Math.fround(Math.fround(Math.fround(x - a.low) * a.scale) + 0.5));
}

const inRange = (x: number, a: SecureSumAttrs): boolean => x >= a.low && x <= a.high;

/** The largest quantized value: q(high). */
export const quantizedSpan = (dtype: SecureDType, a: SecureSumAttrs): number => quantize(a.high, dtype, a);

/**
 * The neighbours per client of SecAgg+'s graph for n clients: 2 ceil(log2 n), the O(log n)
 * degree of Bell et al. 2020 (their Theorem 3.6 needs k = O(log n) for the masks to stay
 * connected, w.h.p., after dropouts and corruptions), so masking costs O(n log n) words per
 * coordinate instead of all pairs' O(n^2).
 */
export const secAggPlusNeighbours = (clients: number): number => 2 * Math.ceil(Math.log2(Math.max(clients, 2)));

/** Mask rounds: ring distances 1..h. A grouped sum without a neighbour count uses SecAgg+'s graph. */
export function maskDistances(clients: number, neighbours: number | null, grouped = false): number {
  const all = Math.floor(clients / 2);
  const k = neighbours ?? (grouped ? secAggPlusNeighbours(clients) : null);
  return k === null ? all : Math.min(k / 2, all);
}

/** Pair keys k(a, d) = foldIn(foldIn(key, a), d) for every label a, as (k0, k1) words. */
function pairKey(key: readonly [number, number], a: number, d: number): [number, number] {
  const [c0, c1] = threefry2x32(key[0], key[1], a, 1);
  return threefry2x32(c0, c1, d, 1);
}

/**
 * The data foldIn takes for the ring's relabelling key, foldIn(key, RING_LABELS): above every
 * label a < 2^23 (the most clients a sum takes), so no pair key is derived from it.
 */
export const RING_LABELS = 0x7fffffff;

/**
 * The clients' labels on the ring: a secret uniformly random permutation of 0..n-1 derived
 * from the key (SecAgg+, Bell et al. 2020, relabel the clients at random so the server cannot
 * choose who neighbours whom). Label of client i: the rank of word i among n words of
 * randomBits(foldIn(key, RING_LABELS)), as unsigned 32-bit integers, ties by client order.
 */
export function ringLabels(key: readonly [number, number], clients: number): Int32Array {
  const words = Uint32Array.from(randomBits(Int32Array.from(threefry2x32(key[0], key[1], RING_LABELS, 1)), clients));
  return Int32Array.from(words, (w, i) => {
    let rank = 0;
    for (let j = 0; j < clients; j++) if (words[j]! < w || (words[j] === w && j < i)) rank++;
    return rank;
  });
}

/**
 * Each client's masked values y_i = (q_i + mask_i) mod 2^bits, from quantized values laid
 * out client-major (clients x size). Client i sits at label L_i = ringLabels(key)[i] and
 * adds, per distance d, the words of k(L_i, d) and subtracts those of k((L_i - d) mod n, d).
 */
export function maskedValues(quantized: ArrayLike<number>, clients: number, size: number, key: readonly [number, number], a: SecureSumAttrs): Int32Array {
  const low = 2 ** a.bits - 1;
  // Reduced mod 2^bits after every distance: acc + word - word lies in (-2^30, 2^31), an
  // exact int32 whose two's-complement low bits are the floor remainder.
  const acc = Int32Array.from(quantized, (q) => q & low);
  const distances = maskDistances(clients, a.neighbours, a.grouped === true);
  const labels = distances > 0 ? ringLabels(key, clients) : new Int32Array(0);
  // The client at each label: the pair (label, label + d)'s words go to both of its clients as
  // they are drawn, so no client x size table of words is held (the sum mod 2^bits is the same
  // in any order).
  const clientAt = new Int32Array(clients);
  labels.forEach((label, i) => (clientAt[label] = i));
  for (let d = 1; d <= distances; d++) {
    for (let label = 0; label < clients; label++) {
      const bits = randomBits(Int32Array.from(pairKey(key, label, d)), size);
      const [adds, subtracts] = [clientAt[label]! * size, clientAt[(label + d) % clients]! * size];
      for (let j = 0; j < size; j++) {
        const word = bits[j]! & low;
        acc[adds + j] = (acc[adds + j]! + word) & low;
        acc[subtracts + j] = (acc[subtracts + j]! - word) & low;
      }
    }
  }
  return acc;
}

/**
 * What every backend checks of a cohort before it sums: FT112 below the fewest clients the
 * sum takes, FT311 unless the cohort's values sum exactly (checkFit).
 */
export function checkCapacity(op: string, clients: number, dtype: SecureDType, a: SecureSumAttrs): void {
  const least = a.minClients ?? DEFAULT_MIN_CLIENTS;
  if (clients < least) {
    throw ftError("FT112", { op, least, clients, why: "a secure sum of fewer clients reveals too much of each one's value (minClients)" });
  }
  checkFit(op, clients, dtype, a);
}

/** FT311 unless n clients' values in the range sum exactly: n span < 2^bits (and, for int32, n low and n high fit int32). */
export function checkFit(op: string, clients: number, dtype: SecureDType, a: SecureSumAttrs): void {
  const span = quantizedSpan(dtype, a);
  const fitsModulus = clients * span < 2 ** a.bits;
  const fitsInt32 = dtype === "float32" || Math.max(Math.abs(clients * a.low), Math.abs(clients * a.high)) < 2 ** 31;
  if (!fitsModulus || !fitsInt32) {
    throw ftError("FT311", { op, clients, span, bits: a.bits, most: Math.max(0, Math.floor((2 ** a.bits - 1) / Math.max(span, 1))) });
  }
}

/** FT309 for `count` values outside the declared range. */
export function outOfRange(op: string, count: number, a: SecureSumAttrs): Error {
  return ftError("FT309", { op, count, low: a.low, high: a.high });
}

/** The dequantized result of a modular sum S over n clients. */
function dequantize(sum: number, clients: number, dtype: SecureDType, a: SecureSumAttrs): number {
  if (dtype === "int32") return sum + clients * a.low;
  return Math.fround(Math.fround(Math.fround(sum) / a.scale) + Math.fround(clients * a.low));
}

/**
 * The whole secure sum on the host: the clients' values (clients x size, client-major) to
 * the dequantized sum; FT311 on overflow, FT309 on values outside the range.
 */
export function secureSumHost(op: string, values: ArrayLike<number>, clients: number, dtype: SecureDType, key: readonly [number, number], a: SecureSumAttrs): number[] {
  checkCapacity(op, clients, dtype, a);
  const size = clients === 0 ? 0 : values.length / clients;
  let bad = 0;
  // q < 2^bits <= 2^30 (checkFit): an int32 each.
  const quantized = Int32Array.from(values, (x) => {
    if (!inRange(x, a)) bad++;
    return quantize(x, dtype, a);
  });
  if (bad > 0) throw outOfRange(op, bad, a);
  const masked = maskedValues(quantized, clients, size, key, a);
  const modulus = 2 ** a.bits;
  const sums = new Array<number>(size).fill(0);
  for (let i = 0; i < clients; i++) for (let j = 0; j < size; j++) sums[j]! += masked[i * size + j]!;
  return sums.map((s) => dequantize(s % modulus, clients, dtype, a));
}

/** Words of a masked value's key: an i32[2] tensor's data. */
export const keyWords = (data: ArrayLike<number>): [number, number] => [data[0]! | 0, data[1]! | 0];
