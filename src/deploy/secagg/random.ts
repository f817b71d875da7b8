/**
 * Where SecAgg+ gets its randomness: key pairs, self-mask seeds, AEAD nonces, stochastic
 * rounding and the server's secret permutation of the clients. The default is WebCrypto's
 * getRandomValues (globalThis.crypto, in Node 20 and in every browser), so this folder has no
 * node:* import and bundles for a page as it is. Tests and benchmarks may inject another
 * source; it must be a CSPRNG for the protocol to be private (never a seeded generator).
 */
import { chacha20 } from "@noble/ciphers/chacha.js";
import { openSsl } from "./openssl.js";

/** n cryptographically random bytes. */
export type RandomBytes = (n: number) => Uint8Array;

/** getRandomValues fills at most 65,536 bytes a call (the WebCrypto limit). */
const WEBCRYPTO_CHUNK = 65536;

export const webCryptoRandomBytes: RandomBytes = (n) => {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += WEBCRYPTO_CHUNK) {
    globalThis.crypto.getRandomValues(out.subarray(at, Math.min(n, at + WEBCRYPTO_CHUNK)));
  }
  return out;
};

const ZERO_NONCE = new Uint8Array(12);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Where the masks' keystream comes from in this process. */
export const keystreamSource: "openssl" | "noble" = openSsl === undefined ? "noble" : "openssl";

/** OpenSSL's 16-byte ChaCha20 IV: the 32-bit block counter, then the 96-bit nonce, both zero. */
const ZERO_COUNTER_AND_NONCE = new Uint8Array(16);

/** The zeros OpenSSL encrypts into its keystream, kept between calls (a mask is 800 KB for the 2NN) and grown as needed; never written. */
let zeros = new Uint8Array(0);

/**
 * The first `bytes` bytes of ChaCha20's keystream under a 32-byte `key` (zero nonce, counter 0),
 * in a fresh buffer whose offset is a multiple of 4: OpenSSL's on Node (openssl.ts), else
 * @noble/ciphers'. `implementation` "noble" forces @noble's (the tests compare the two).
 */
export function keystream(key: Uint8Array, bytes: number, implementation: "fastest" | "noble" = "fastest"): Uint8Array {
  if (implementation === "fastest" && openSsl !== undefined) {
    if (zeros.length < bytes) zeros = new Uint8Array(bytes);
    const out = openSsl.createCipheriv("chacha20", key, ZERO_COUNTER_AND_NONCE).update(zeros.subarray(0, bytes));
    return out.byteOffset % 4 === 0 ? out : new Uint8Array(out); // a copy (Buffer's slice is a view)
  }
  return chacha20(key, ZERO_NONCE, new Uint8Array(bytes));
}

/**
 * The first `words` 32-bit little-endian words of ChaCha20's keystream under a 32-byte seed
 * (RFC 8439, zero nonce, counter 0): the PRG that expands a mask seed. A seed keys exactly
 * one stream (each seed is fresh per round), so the fixed nonce never repeats under one key.
 */
export function prgWords(seed: Uint8Array, words: number): Uint32Array {
  const bytes = keystream(seed, words * 4);
  if (LITTLE_ENDIAN) return new Uint32Array(bytes.buffer, bytes.byteOffset, words); // a fresh, aligned buffer
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(words);
  for (let i = 0; i < words; i++) out[i] = view.getUint32(4 * i, true);
  return out;
}

/**
 * `count` uniform 32-bit words from a fresh random seed expanded with ChaCha20: the stochastic
 * rounding's coin flips (word / 2^32 is uniform in [0, 1)), cheaper than asking the CSPRNG for
 * 4 bytes per coordinate and as unpredictable.
 */
export const coinWords = (randomBytes: RandomBytes, count: number): Uint32Array => prgWords(randomBytes(32), count);

/** A uniform integer in [0, bound) by rejection sampling (no modulo bias), bound <= 2^32. */
export function uniformInt(randomBytes: RandomBytes, bound: number): number {
  const limit = Math.floor(2 ** 32 / bound) * bound;
  for (;;) {
    const b = randomBytes(4);
    const x = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
    if (x < limit) return x % bound;
  }
}

/**
 * Bytes from ChaCha20's keystream under `key`, read in order: a deterministic generator for
 * public randomness that every party must reproduce (the neighbour graph's permutation). Never
 * for a secret: anyone with the key has the stream.
 */
export function streamBytes(key: Uint8Array): RandomBytes {
  let block = new Uint8Array(0);
  let at = 0;
  let counter = 0;
  return (n) => {
    const out = new Uint8Array(n);
    for (let filled = 0; filled < n; ) {
      if (at === block.length) {
        // 4096 bytes of keystream at a time: 64 ChaCha20 blocks, counted on from the last.
        block = chacha20(key, ZERO_NONCE, new Uint8Array(4096), undefined, counter);
        counter += 64;
        at = 0;
      }
      const take = Math.min(n - filled, block.length - at);
      out.set(block.subarray(at, at + take), filled);
      filled += take;
      at += take;
    }
    return out;
  };
}
