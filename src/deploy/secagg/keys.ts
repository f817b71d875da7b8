/**
 * SecAgg+'s keys (Bonawitz et al. 2017, section 4): each client makes two X25519 key pairs per
 * round. The encryption pair (c) keys the AEAD channel through which it sends its shares to
 * each neighbour; the masking pair (s) gives each pair of neighbours the seed of their pairwise
 * mask. Only the masking secret key is Shamir-shared: the server rebuilding a dropped client's
 * s key learns that client's pair masks, never the channel keys, so it still cannot read the
 * shares it routes.
 *
 * Both secrets come from ECDH then HKDF-SHA256, with the purpose, the key setup's session, the
 * round and the two client ids (in a fixed order) in HKDF's info: a seed serves one purpose, one
 * pair and one round, also when the keys serve several rounds (reuse.ts).
 * Shares travel under AES-256-GCM (@noble/ciphers) with a random 12-byte nonce and the round,
 * sender and recipient as associated data, so the server cannot move a ciphertext to another
 * recipient, round or sender without the AEAD refusing it.
 */
import { gcm } from "@noble/ciphers/aes.js";
import { x25519 as nobleX25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { forgetSecretKey, openSsl, openSslX25519, type X25519 } from "./openssl.js";
import type { RandomBytes } from "./random.js";

export const KEY_BYTES = 32;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
/** The protocol's name and version, in every derivation and every message. */
export const PROTOCOL = "fedtensor-secagg+/5";

const encoder = new TextEncoder();
const utf8 = (s: string): Uint8Array => encoder.encode(s);

/** OpenSSL's X25519 on Node, @noble's in a browser: the same RFC 7748 function (openssl.ts). */
const x25519: X25519 = openSsl === undefined ? nobleX25519 : openSslX25519(openSsl);

export interface KeyPair {
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

export function newKeyPair(randomBytes: RandomBytes): KeyPair {
  const secretKey = randomBytes(KEY_BYTES);
  return { secretKey, publicKey: x25519.getPublicKey(secretKey) };
}

/** Zeroes a secret key that is no longer needed, and OpenSSL's copy of it with it (openssl.ts). */
export function eraseSecretKey(secretKey: Uint8Array): void {
  forgetSecretKey(secretKey);
  secretKey.fill(0);
}

/** The public key of a secret key: what a rebuilt masking key is checked against. */
export const publicKeyOf = (secretKey: Uint8Array): Uint8Array => x25519.getPublicKey(secretKey);

export type SecretPurpose = "share-encryption" | "pair-mask";

/**
 * The secret of the pair {a, b} for one purpose in one round: HKDF-SHA256 of the X25519
 * shared secret, salted with the protocol name; both ends derive the same bytes. `session` is
 * the session of the setup that made the keys.
 */
export function pairSecret(
  mySecretKey: Uint8Array,
  theirPublicKey: Uint8Array,
  purpose: SecretPurpose,
  session: string,
  round: number,
  a: string,
  b: string,
): Uint8Array {
  const shared = x25519.getSharedSecret(mySecretKey, theirPublicKey);
  const [first, second] = a < b ? [a, b] : [b, a];
  const info = utf8(`${purpose}|${session}|${round}|${first.length}:${first}|${second.length}:${second}`);
  const out = hkdf(sha256, shared, utf8(PROTOCOL), info, KEY_BYTES);
  shared.fill(0);
  return out;
}

const shareAad = (round: number, from: string, to: string): Uint8Array =>
  utf8(`${PROTOCOL}|shares|${round}|${from.length}:${from}|${to.length}:${to}`);

export interface Sealed {
  readonly nonce: Uint8Array;
  readonly ciphertext: Uint8Array;
}

export function sealShares(key: Uint8Array, plaintext: Uint8Array, round: number, from: string, to: string, randomBytes: RandomBytes): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  return { nonce, ciphertext: gcm(key, nonce, shareAad(round, from, to)).encrypt(plaintext) };
}

/** The plaintext, or null when the AEAD refuses (a wrong key, a tampered or moved ciphertext). */
export function openShares(key: Uint8Array, sealed: Sealed, round: number, from: string, to: string): Uint8Array | null {
  try {
    return gcm(key, sealed.nonce, shareAad(round, from, to)).decrypt(sealed.ciphertext);
  } catch {
    return null;
  }
}

/**
 * The commitment to a self-mask seed that a client sends with its shares: SHA-256 over a domain
 * tag, the round, the client and the seed. It lets the server tell a seed rebuilt from
 * consistent shares from one rebuilt from a bad share; the seed is 32 random bytes, so the
 * hash reveals nothing of it.
 */
export function seedCommitment(seed: Uint8Array, round: number, client: string): Uint8Array {
  const tag = utf8(`${PROTOCOL}|self-mask-seed|${round}|${client.length}:${client}|`);
  const input = new Uint8Array(tag.length + seed.length);
  input.set(tag);
  input.set(seed, tag.length);
  return sha256(input);
}

/** Constant-time byte equality (the lengths are public). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
