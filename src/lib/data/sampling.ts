/**
 * Choosing a round's clients from your own data: Poisson sampling (each client independently
 * with probability q, so the cohort's size varies) and fixed-size sampling (m distinct clients,
 * every m-subset equally likely).
 *
 * Both draw from a RandomSource. The default is secretRandom(), the operating system's CSPRNG
 * through node:crypto: differential privacy's amplification by subsampling (the accounting of
 * privacy/rdp.ts) holds only when nobody can tell who was sampled, and a sample drawn from a
 * seeded generator is known to anyone who knows the seed. A seeded Rng (random.ts) is the
 * source for research runs that must repeat, where the sample is not a secret.
 */
import { randomBytes, randomInt } from "node:crypto";
import { ftError } from "../../errors/error.js";

/** Uniform randomness a sampler draws from: random.ts's Rng is one, secretRandom() another. */
export interface RandomSource {
  /** A uniform float in [0, 1). */
  float(): number;
  /** A uniform integer in [min, maxExclusive). */
  int(min: number, maxExclusive: number): number;
}

const TWO_POW_53 = 2 ** 53;
/** Bytes fetched from the OS at a time: one call serves 512 floats. */
const poolBytes = 4096;

/** Draws from the operating system's CSPRNG (node:crypto); never seeded, never repeatable. */
class SecretRandom implements RandomSource {
  private pool = Buffer.alloc(0);
  private at = 0;

  float(): number {
    if (this.at + 8 > this.pool.length) {
      this.pool = randomBytes(poolBytes);
      this.at = 0;
    }
    // 53 random bits, as Rng.float() takes them: 27 from one word, 26 from the next.
    const high = this.pool.readUInt32LE(this.at) >>> 5;
    const low = this.pool.readUInt32LE(this.at + 4) >>> 6;
    // Used bytes are zeroed, so the pool never holds a draw already given out.
    this.pool.fill(0, this.at, this.at + 8);
    this.at += 8;
    return (high * 67108864 + low) / TWO_POW_53;
  }

  int(min: number, maxExclusive: number): number {
    // node:crypto's randomInt rejects biased draws itself; it takes ranges up to 2^48.
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(maxExclusive) || maxExclusive - min < 1 || maxExclusive - min > 2 ** 48) {
      throw ftError("FT305", { option: "int(min, maxExclusive)", why: `needs integers with 1 <= maxExclusive - min <= 2^48, got ${min}, ${maxExclusive}` });
    }
    return randomInt(min, maxExclusive);
  }
}

/** A RandomSource on the operating system's CSPRNG (node:crypto). */
export function secretRandom(): RandomSource {
  return new SecretRandom();
}

let sharedSecret: RandomSource | undefined;
const defaultSource = (): RandomSource => (sharedSecret ??= secretRandom());

/**
 * Poisson sampling: each client is in the sample independently with probability q. Given a
 * number of clients, the sampled positions (ascending); given an array, its sampled members
 * in order. The sample may be empty, and its size varies from round to round: the DP
 * accounting of a sampling rate q assumes exactly this, and a DP sum is divided by the
 * expected size q * clients, not the drawn one.
 */
export function poissonSample(clients: number, q: number, random?: Pick<RandomSource, "float">): Int32Array;
export function poissonSample<T>(clients: readonly T[], q: number, random?: Pick<RandomSource, "float">): T[];
export function poissonSample<T>(clients: number | readonly T[], q: number, random: Pick<RandomSource, "float"> = defaultSource()): Int32Array | T[] {
  const n = clientCount(clients);
  if (!(q >= 0 && q <= 1)) throw ftError("FT305", { option: "q", why: `a sampling probability is in [0, 1], got ${q}` });
  const positions: number[] = [];
  // One draw per client, whatever q is, so a client's fate does not depend on the others'.
  for (let i = 0; i < n; i++) if (random.float() < q) positions.push(i);
  return members(clients, Int32Array.from(positions));
}

/**
 * Fixed-size sampling without replacement: m distinct clients, every set of m equally likely
 * (Floyd's algorithm: m draws, whatever the number of clients). Positions ascending, or the
 * array's members in order.
 */
export function fixedSizeSample(clients: number, m: number, random?: RandomSource): Int32Array;
export function fixedSizeSample<T>(clients: readonly T[], m: number, random?: RandomSource): T[];
export function fixedSizeSample<T>(clients: number | readonly T[], m: number, random: RandomSource = defaultSource()): Int32Array | T[] {
  const n = clientCount(clients);
  if (!Number.isInteger(m) || m < 0 || m > n) throw ftError("FT305", { option: "m", why: `a sample size is a whole number in [0, ${n}] (the clients), got ${m}` });
  const chosen = new Set<number>();
  for (let j = n - m; j < n; j++) {
    const t = random.int(0, j + 1);
    chosen.add(chosen.has(t) ? j : t);
  }
  return members(clients, Int32Array.from(chosen).sort());
}

function clientCount(clients: number | readonly unknown[]): number {
  if (Array.isArray(clients)) return clients.length;
  if (typeof clients === "number" && Number.isInteger(clients) && clients >= 0) return clients;
  throw ftError("FT305", { option: "clients", why: `expected a number of clients or an array of them, got ${String(clients)}` });
}

function members<T>(clients: number | readonly T[], positions: Int32Array): Int32Array | T[] {
  return typeof clients === "number" ? positions : Array.from(positions, (i) => clients[i]!);
}
