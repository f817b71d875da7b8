/**
 * Distributed DP on plain arrays: the client's encoding and the server's decoding of
 * distributed-dp.ts's mechanism, for a client and a server that are separate processes or
 * browser tabs (`fedtensor serve --aggregator distributed-dp`). No node:* import: it runs in a
 * browser. The traced aggregator (src/front/distributed-dp.ts) computes the same steps in a
 * graph; the rotation here is bit for bit randomHadamard's sign pattern (Threefry words of the
 * rotation key, src/ir/threefry.ts), in float64.
 *
 * Client: clip to L2 norm c, pad to d = 2^m, rotate (H D / sqrt(d)), scale by gamma, round each
 * coordinate up with probability its fractional part, keeping the first of `tries` roundings
 * whose norm is at most B (conditional randomized rounding; none: zeros, which keeps the bound
 * B whatever happens), add N_Z(0, sigma^2) per coordinate, wrap mod 2^bits. The random words
 * come from a cryptographic source: globalThis.crypto.getRandomValues unless a test gives its own.
 *
 * Server: the sum of the clients' vectors mod 2^bits (in deployment the SecAgg+ unmasked sum,
 * which is the same number), taken to [-2^(bits-1), 2^(bits-1)), divided by gamma, rotated back
 * and cropped to the update's length.
 */
import { ftError } from "../../errors/error.js";
import { randomBits } from "../../ir/threefry.js";
import { discreteGaussianOfWords, discreteGaussianTable, DISCRETE_GAUSSIAN_WORDS, type DiscreteGaussianTable } from "../../ir/discrete-gaussian.js";
import { calibrateDistributedDp, type DistributedDpCalibration, type DistributedDpParameters } from "../../ir/distributed-dp-calibration.js";

/** Fills `out` with random 32-bit words. */
export type RandomWords = (out: Int32Array) => void;

/** The platform's CSPRNG (Web Crypto; Node's globalThis.crypto is the same API), in its 64 KiB pieces. */
export const cryptoRandomWords: RandomWords = (out) => {
  const crypto = (globalThis as { crypto?: { getRandomValues(a: Int32Array): Int32Array } }).crypto;
  if (crypto === undefined) throw new Error("distributed DP needs globalThis.crypto.getRandomValues for the clients' noise");
  for (let at = 0; at < out.length; at += 16384) crypto.getRandomValues(out.subarray(at, Math.min(out.length, at + 16384)));
};

/** The least power of two >= n. */
const paddedLength = (n: number): number => {
  let d = 1;
  while (d < n) d *= 2;
  return d;
};

/** The options of a codec: the mechanism's parameters (the dimension follows from `length`). */
export interface DistributedDpCodecOptions extends Omit<DistributedDpParameters, "dimension"> {
  /** The update's length n (the rotated length d is the least power of two >= n). */
  readonly length: number;
  /** The shared rotation key (two int32 words): the same for every client of a round and the server. */
  readonly rotationKey: readonly [number, number];
  /** Roundings a client tries before it sends zeros (default 4, as distributedDpSum). */
  readonly tries?: number;
}

export interface DistributedDpCodec {
  readonly calibration: DistributedDpCalibration;
  readonly table: DiscreteGaussianTable;
  /** A client's update as its d integers in [0, 2^bits). */
  encode(update: Float32Array, random?: RandomWords): Int32Array;
  /** The sum mod 2^bits of encoded vectors (what the secure sum gives the server). */
  sum(encoded: readonly Int32Array[]): Int32Array;
  /** The decoded sum (length n) of `clients` clients' encodings; FT112 below minClients. */
  decode(sum: Int32Array, clients: number): Float32Array;
}

/** Normalized fast Walsh-Hadamard transform in place (H v / sqrt(d)), the butterfly order of rotation.ts. */
function walshHadamard(v: Float64Array): void {
  const d = v.length;
  for (let h = 1; h < d; h *= 2) {
    for (let block = 0; block < d; block += 2 * h) {
      for (let j = block; j < block + h; j++) {
        const [a, b] = [v[j]!, v[j + h]!];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
  const norm = 1 / Math.sqrt(d);
  for (let i = 0; i < d; i++) v[i]! *= norm;
}

/** randomHadamard's signs of a key: -1 where the Threefry word is negative. */
export function rotationSigns(key: readonly [number, number], d: number): Float64Array {
  const words = randomBits(new Int32Array(key), d);
  return Float64Array.from(words, (w) => (w < 0 ? -1 : 1));
}

export function distributedDpCodec(options: DistributedDpCodecOptions): DistributedDpCodec {
  const n = options.length;
  if (!(Number.isInteger(n) && n >= 1)) throw ftError("FT346", { why: `the update's length must be a whole number >= 1, got ${n}` });
  const tries = options.tries ?? 4;
  if (!(Number.isInteger(tries) && tries >= 1)) throw ftError("FT346", { why: `tries must be a whole number >= 1, got ${tries}` });
  const d = paddedLength(n);
  const calibration = calibrateDistributedDp({ ...options, dimension: d });
  const table = discreteGaussianTable(calibration.localSigma);
  const signs = rotationSigns(options.rotationKey, d);
  const modulus = 2 ** calibration.bits;
  const boundSquared = calibration.l2Bound ** 2;
  const { scale, clip } = calibration;

  const encode = (update: Float32Array, random: RandomWords = cryptoRandomWords): Int32Array => {
    if (update.length !== n) throw ftError("FT347", { why: `a client's update has ${update.length} values, the codec ${n}` });
    let squares = 0;
    for (const x of update) squares += x * x;
    if (!Number.isFinite(squares)) throw ftError("FT347", { why: "a client's update holds NaN or an infinite value (refused before it is noised)" });
    const clipFactor = Math.min(1, clip / Math.sqrt(squares));
    const v = new Float64Array(d);
    for (let i = 0; i < n; i++) v[i] = update[i]! * clipFactor * signs[i]!;
    walshHadamard(v);
    for (let i = 0; i < d; i++) v[i]! *= scale;

    const uniforms = new Int32Array(d);
    let rounded = new Int32Array(d);
    let accepted = false;
    for (let attempt = 0; attempt < tries && !accepted; attempt++) {
      random(uniforms);
      let norm = 0;
      for (let i = 0; i < d; i++) {
        const low = Math.floor(v[i]!);
        const up = (uniforms[i]! >>> 0) / 2 ** 32 < v[i]! - low ? 1 : 0;
        rounded[i] = low + up;
        norm += rounded[i]! * rounded[i]!;
      }
      accepted = norm <= boundSquared;
    }
    if (!accepted) rounded = new Int32Array(d);

    const words = new Int32Array(d * DISCRETE_GAUSSIAN_WORDS);
    random(words);
    const out = new Int32Array(d);
    for (let i = 0; i < d; i++) {
      const noisy = rounded[i]! + discreteGaussianOfWords(table, words, i * DISCRETE_GAUSSIAN_WORDS);
      out[i] = ((noisy % modulus) + modulus) % modulus;
    }
    return out;
  };

  const sum = (encoded: readonly Int32Array[]): Int32Array => {
    const out = new Float64Array(d);
    encoded.forEach((vector, c) => {
      if (vector.length !== d) throw ftError("FT347", { why: `client vector ${c} has ${vector.length} values, the rotated length is ${d}` });
      for (let i = 0; i < d; i++) {
        const value = vector[i]!;
        if (!(value >= 0 && value < modulus)) throw ftError("FT347", { why: `client vector ${c} holds ${value} at ${i}, outside [0, 2^${calibration.bits})` });
        out[i] = (out[i]! + value) % modulus;
      }
    });
    return Int32Array.from(out);
  };

  const decode = (total: Int32Array, clients: number): Float32Array => {
    if (clients < calibration.minClients) {
      throw ftError("FT112", { op: "distributedDpSum", least: String(calibration.minClients), clients: String(clients), why: "the noise is calibrated for at least minClients survivors; fewer would release a sum with less noise than accounted" });
    }
    if (total.length !== d) throw ftError("FT347", { why: `the sum has ${total.length} values, the rotated length is ${d}` });
    const v = new Float64Array(d);
    for (let i = 0; i < d; i++) {
      const wrapped = ((total[i]! % modulus) + modulus) % modulus;
      v[i] = (wrapped >= modulus / 2 ? wrapped - modulus : wrapped) / scale;
    }
    walshHadamard(v);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = v[i]! * signs[i]!;
    return out;
  };

  return { calibration, table, encode, sum, decode };
}
