/**
 * Seeded, reproducible randomness for FedTensor: model initialisation, client sampling,
 * data partitions and per-round shuffles all draw from `Rng` streams, so a run is fully
 * determined by its seed.
 *
 * The generator is xoshiro128** (Blackman and Vigna), 32-bit arithmetic only, so JavaScript
 * computes it exactly with `Math.imul` and unsigned shifts. A stream's state is derived from
 * a 128-bit key with MurmurHash3's 32-bit mixing; `fork(label)` hashes the parent's key with
 * the label, so a fork depends only on the seed and the chain of labels, never on how many
 * numbers the parent has drawn. That keeps, for example, the model's initial weights the
 * same when a data loader starts drawing a few more numbers.
 *
 * Usage:
 *   const rng = Rng.fromSeed(42);
 *   const init = rng.fork("init");          // independent of rng's own draws
 *   const w = init.normal(0, 0.05);
 *   const cohort = rng.fork("round:3").sample(100, 10);
 */
import { ftError } from "../errors/error.js";

const TWO_POW_32 = 0x1_0000_0000;
const TWO_POW_53 = 2 ** 53;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** MurmurHash3's finaliser: every input bit affects every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** MurmurHash3 (x86, 32-bit) over a sequence of 32-bit words. */
function murmur3Words(words: readonly number[], salt: number): number {
  let h = salt >>> 0;
  for (const word of words) {
    let k = Math.imul(word, 0xcc9e2d51);
    k = rotl(k, 15);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = rotl(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  return fmix32(h ^ (words.length * 4));
}

/** Four independent hashes of the words: a 128-bit key. */
function deriveKey(words: readonly number[]): Uint32Array {
  const key = new Uint32Array(4);
  for (let i = 0; i < 4; i++) key[i] = murmur3Words(words, 0x9e3779b9 * (i + 1));
  return key;
}

function checkPositiveFinite(option: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw ftError("FT305", { option, why: `must be a finite number > 0, got ${value}` });
  }
}

/** A seeded stream of random numbers (xoshiro128**). Not safe to share across async tasks that race. */
export class Rng {
  private readonly key: Uint32Array;
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  /** Box-Muller makes normals in pairs; the second one waits here. */
  private spareNormal: number | undefined;

  private constructor(key: Uint32Array) {
    this.key = key;
    [this.s0, this.s1, this.s2, this.s3] = [key[0]!, key[1]!, key[2]!, key[3]!];
    // xoshiro's only bad state is all zeros; a hash gives it with probability 2^-128.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A root stream from an integer seed (any safe integer, negative included). */
  static fromSeed(seed: number): Rng {
    if (!Number.isSafeInteger(seed)) {
      throw ftError("FT305", { option: "seed", why: `must be a safe integer, got ${seed}` });
    }
    const low = seed >>> 0;
    const high = Math.floor(seed / TWO_POW_32) >>> 0;
    return new Rng(deriveKey([low, high]));
  }

  /** An independent stream named by label; the same seed and label chain give the same stream. */
  fork(label: string): Rng {
    const words = Array.from(this.key);
    for (let i = 0; i < label.length; i++) words.push(label.charCodeAt(i));
    return new Rng(deriveKey(words));
  }

  /** The next 32 random bits, as an unsigned integer in [0, 2^32). */
  uint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A uniform float in [0, 1) with 53 random bits. */
  float(): number {
    const high = this.uint32() >>> 5; // 27 bits
    const low = this.uint32() >>> 6; // 26 bits
    return (high * 67108864 + low) / TWO_POW_53;
  }

  /** A uniform integer in [min, maxExclusive), without modulo bias; the range may be up to 2^32. */
  int(min: number, maxExclusive: number): number {
    const range = maxExclusive - min;
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(maxExclusive) || range < 1 || range > TWO_POW_32) {
      throw ftError("FT305", {
        option: "int(min, maxExclusive)",
        why: `needs integers with 1 <= maxExclusive - min <= 2^32, got ${min}, ${maxExclusive}`,
      });
    }
    // Reject the top sliver of [0, 2^32) that does not divide evenly by range.
    const limit = TWO_POW_32 - (TWO_POW_32 % range);
    let draw = this.uint32();
    while (draw >= limit) draw = this.uint32();
    return min + (draw % range);
  }

  /** A normal sample (Box-Muller). */
  normal(mean = 0, std = 1): number {
    if (this.spareNormal !== undefined) {
      const spare = this.spareNormal;
      this.spareNormal = undefined;
      return mean + std * spare;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - this.float())); // 1 - float() is in (0, 1]
    const angle = 2 * Math.PI * this.float();
    this.spareNormal = radius * Math.sin(angle);
    return mean + std * radius * Math.cos(angle);
  }

  /** Shuffles in place (Fisher-Yates) and returns the same array. */
  shuffle<T extends { length: number; [index: number]: unknown }>(array: T): T {
    for (let i = array.length - 1; i > 0; i--) {
      const j = this.int(0, i + 1);
      const held = array[i];
      array[i] = array[j];
      array[j] = held;
    }
    return array;
  }

  /** A uniformly random permutation of 0..n-1. */
  permutation(n: number): Int32Array {
    const order = new Int32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    return this.shuffle(order);
  }

  /** k distinct integers from [0, n), in random order (a partial Fisher-Yates shuffle). */
  sample(n: number, k: number): Int32Array {
    if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || k > n) {
      throw ftError("FT305", { option: "sample(n, k)", why: `needs integers 0 <= k <= n, got n=${n}, k=${k}` });
    }
    const pool = new Int32Array(n);
    for (let i = 0; i < n; i++) pool[i] = i;
    for (let i = 0; i < k; i++) {
      const j = this.int(i, n);
      const held = pool[i]!;
      pool[i] = pool[j]!;
      pool[j] = held;
    }
    return pool.slice(0, k);
  }

  /** A Gamma(shape, scale) sample (Marsaglia and Tsang, 2000). */
  gamma(shape: number, scale = 1): number {
    checkPositiveFinite("gamma shape", shape);
    checkPositiveFinite("gamma scale", scale);
    return Math.exp(this.logGamma(shape)) * scale;
  }

  /**
   * A Dirichlet(alpha) sample: nonnegative weights that sum to 1.
   * Computed from log-gamma samples, so tiny alphas (0.01) do not underflow to 0/0.
   */
  dirichlet(alpha: readonly number[]): Float64Array {
    if (alpha.length === 0) throw ftError("FT305", { option: "dirichlet alpha", why: "needs at least one entry" });
    for (const a of alpha) checkPositiveFinite("dirichlet alpha", a);
    const logs = alpha.map((a) => this.logGamma(a));
    const largest = Math.max(...logs);
    const weights = Float64Array.from(logs, (l) => Math.exp(l - largest));
    const total = weights.reduce((sum, w) => sum + w, 0);
    return weights.map((w) => w / total);
  }

  /** log of a Gamma(shape, 1) sample; the log form keeps shape < 1 samples from underflowing. */
  private logGamma(shape: number): number {
    if (shape < 1) {
      // Gamma(a) = Gamma(a + 1) * U^(1/a) (Marsaglia and Tsang, section 6).
      const u = 1 - this.float();
      return this.logGamma(shape + 1) + Math.log(u) / shape;
    }
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      const x = this.normal();
      const base = 1 + c * x;
      if (base <= 0) continue;
      const v = base * base * base;
      const u = 1 - this.float();
      const x2 = x * x;
      // The first test is a cheap squeeze that accepts most samples without a log.
      if (u < 1 - 0.0331 * x2 * x2 || Math.log(u) < 0.5 * x2 + d * (1 - v + Math.log(v))) {
        return Math.log(d * v);
      }
    }
  }
}
