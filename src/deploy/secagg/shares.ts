/**
 * Shamir t-of-k sharing of the two secrets a client entrusts to its neighbours (its self-mask
 * seed and its masking secret key), with the audited `shamir-secret-sharing` package: it
 * shares byte strings byte by byte over GF(256), a share being the secret's length plus one
 * byte, its x coordinate (random, distinct, non-zero).
 *
 * Rebuilding checks the result against the client's public commitment (the seed's hash, the
 * public key), so a bad share cannot pass unnoticed: with more than t shares, the subsets of t
 * are tried until one rebuilds the committed secret, and every share off that polynomial is
 * named. A wrong share among t shares always moves the rebuilt secret: its Lagrange
 * coefficient at 0 is a product of non-zero field elements.
 */
import { combine, split } from "shamir-secret-sharing";
import { KEY_BYTES } from "./keys.js";

/** A Shamir share of a 32-byte secret: 32 bytes and the x coordinate. */
export const SHARE_BYTES = KEY_BYTES + 1;
/** The plaintext a client seals for one neighbour: its shares of the key_rounds self-mask seeds, then of the secret key. */
export const sharePackBytes = (keyRounds: number): number => (keyRounds + 1) * SHARE_BYTES;
/** How many t-subsets a rebuild tries before it gives up on a secret with bad shares. */
const MAX_SUBSETS = 5000;

/** `count` shares of a 32-byte secret, any `threshold` of which rebuild it. */
export function splitSecret(secret: Uint8Array, count: number, threshold: number): Promise<Uint8Array[]> {
  return split(secret, count, threshold);
}

export function packShares(seedShares: readonly Uint8Array[], keyShare: Uint8Array): Uint8Array {
  const out = new Uint8Array(sharePackBytes(seedShares.length));
  seedShares.forEach((share, i) => out.set(share, i * SHARE_BYTES));
  out.set(keyShare, seedShares.length * SHARE_BYTES);
  return out;
}

/** The shares of one neighbour's `keyRounds` seeds and of its key, or null when the plaintext is not that long. */
export function unpackShares(plaintext: Uint8Array, keyRounds: number): { seedShares: Uint8Array[]; keyShare: Uint8Array } | null {
  if (plaintext.length !== sharePackBytes(keyRounds)) return null;
  const seedShares = Array.from({ length: keyRounds }, (_, i) => plaintext.slice(i * SHARE_BYTES, (i + 1) * SHARE_BYTES));
  return { seedShares, keyShare: plaintext.slice(keyRounds * SHARE_BYTES) };
}

/** A share as the server receives it in the unmask step: which client sent it. */
export interface SubmittedShare {
  readonly from: string;
  readonly share: Uint8Array;
}

export type Rebuilt =
  | { readonly secret: Uint8Array; readonly inconsistent: readonly string[] }
  | { readonly secret: null; readonly reason: string; readonly inconsistent: readonly string[] };

async function tryCombine(shares: readonly Uint8Array[], verify: (secret: Uint8Array) => boolean): Promise<Uint8Array | null> {
  try {
    const secret = await combine(shares as Uint8Array[]);
    return secret.length === KEY_BYTES && verify(secret) ? secret : null;
  } catch {
    return null; // duplicate x coordinates, mixed lengths: not a consistent set
  }
}

/** The t-subsets of 0..n-1 in lexicographic order. */
function* subsets(n: number, t: number): Generator<number[]> {
  const pick = Array.from({ length: t }, (_, i) => i);
  for (;;) {
    yield pick.slice();
    let i = t - 1;
    while (i >= 0 && pick[i] === n - t + i) i--;
    if (i < 0) return;
    pick[i]!++;
    for (let j = i + 1; j < t; j++) pick[j] = pick[j - 1]! + 1;
  }
}

/**
 * Rebuilds a secret from the shares submitted for it, checked by `verify` (its commitment).
 * Fewer than `threshold` well-formed shares, or no consistent subset, is a failure with a
 * reason; the shares off the committed polynomial are returned by sender either way.
 */
export async function rebuildSecret(
  submitted: readonly SubmittedShare[],
  threshold: number,
  verify: (secret: Uint8Array) => boolean,
): Promise<Rebuilt> {
  const malformed = submitted.filter((s) => s.share.length !== SHARE_BYTES).map((s) => s.from);
  const shares = submitted.filter((s) => s.share.length === SHARE_BYTES);
  if (shares.length < threshold)
    return { secret: null, reason: `${shares.length} well-formed shares, ${threshold} needed`, inconsistent: malformed };
  const all = await tryCombine(
    shares.map((s) => s.share),
    verify,
  );
  if (all !== null) return { secret: all, inconsistent: malformed };

  let tried = 0;
  for (const pick of subsets(shares.length, threshold)) {
    if (++tried > MAX_SUBSETS) break;
    const chosen = pick.map((i) => shares[i]!.share);
    const secret = await tryCombine(chosen, verify);
    if (secret === null) continue;
    // t - 1 shares of the good subset and one candidate rebuild the secret iff the candidate is on its polynomial.
    const base = chosen.slice(0, threshold - 1);
    const inconsistent = [...malformed];
    for (const s of shares) {
      if (chosen.includes(s.share)) continue;
      if ((await tryCombine([...base, s.share], verify)) === null) inconsistent.push(s.from);
    }
    return { secret, inconsistent };
  }
  return {
    secret: null,
    reason: `no ${threshold} of the ${shares.length} shares rebuild the committed secret${tried > MAX_SUBSETS ? ` (gave up after ${MAX_SUBSETS} subsets)` : ""}`,
    inconsistent: malformed,
  };
}
