/**
 * The masks (Bonawitz et al. 2017): client u sends
 *   y_u = q_u + PRG(b_u) + sum over neighbours v of sign(u, v) PRG(s_uv)   (mod M)
 * where b_u is its fresh self-mask seed, s_uv the pair secret it shares with v (ECDH + HKDF,
 * keys.ts), sign(u, v) = +1 when u's id sorts before v's and -1 otherwise, so each pair's mask
 * is added by one end and subtracted by the other and cancels in the sum. The self mask stops
 * the server from unmasking a client that it claims dropped after its y_u arrived: it would
 * need both b_u and u's secret key, and the honest neighbours hand out only one of the two.
 * PRG is ChaCha20's keystream (random.ts); its words are uniform on 2^32, so their low bits are
 * uniform on M.
 */
import { addMod } from "./quantize.js";
import { prgWords } from "./random.js";

export const pairSign = (me: string, other: string): 1 | -1 => (me < other ? 1 : -1);

/** into += sign * PRG(seed) (mod M), in place. */
export function applyMask(into: Uint32Array, seed: Uint8Array, sign: 1 | -1, modulus: number): void {
  addMod(into, prgWords(seed, into.length), sign, modulus);
}

/**
 * A client's whole mask, PRG(b_u) + sum over its partners v of sign(u, v) PRG(s_uv) (mod M), as
 * one vector. It depends on keys only, not on the input, so a client expands it while it still
 * trains and adds it to its quantized input in one pass when the training ends. Each pair seed
 * is zeroed once expanded; the caller zeroes the self seed and, once used, the mask.
 */
export function sumOfMasks(length: number, modulus: number, selfSeed: Uint8Array, me: string, partners: Iterable<string>, pairSeed: (other: string) => Uint8Array): Uint32Array {
  const mask = new Uint32Array(length);
  applyMask(mask, selfSeed, 1, modulus);
  for (const other of partners) {
    const seed = pairSeed(other);
    applyMask(mask, seed, pairSign(me, other), modulus);
    seed.fill(0);
  }
  return mask;
}
