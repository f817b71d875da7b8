/**
 * Long-term client identities (Bell et al. 2020, the malicious-server model): each client holds
 * an Ed25519 key pair (OpenSSL in Node, @noble/curves in a browser: openssl.ts) for the life of its process, and signs its round keys
 * with it in every advertise-keys message. The signature binds the protocol, the setup's
 * session, the round, the client's id and both X25519 public keys, so the server can neither
 * hand a client keys of its own making as a neighbour's nor move a signed pair to another
 * round, session or client.
 *
 * A signature proves only that the keys come from whoever holds the identity key; what ties an
 * identity key to a client is its pin: a client pins each peer's identity key the first time a
 * share-keys request shows it (trust on first use) and refuses a later request that shows
 * another key for that peer (FT357). So a server that substitutes keys after the first round a
 * client met a peer is caught; one that lies from the first meeting is not (no PKI: docs/
 * deployment.md, "Threat model").
 */
import { ed25519 as nobleEd25519 } from "@noble/curves/ed25519.js";
import { KEY_BYTES, PROTOCOL } from "./keys.js";
import { openSsl, openSslEd25519, type Ed25519 } from "./openssl.js";
import type { RandomBytes } from "./random.js";

export const SIGNATURE_BYTES = 64;

/** OpenSSL's Ed25519 where Node has it, @noble's in a browser (openssl.ts says where they differ, and why that is safe). */
const ed25519: Ed25519 = openSsl === undefined ? { sign: nobleEd25519.sign, verify: (signature, message, publicKey) => nobleEd25519.verify(signature, message, publicKey, { zip215: false }) } : openSslEd25519(openSsl);

export interface Identity {
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

export const newIdentity = (randomBytes: RandomBytes): Identity => identityOf(randomBytes(KEY_BYTES));

/** The identity of a 32-byte Ed25519 secret key (one kept in a file: `fedtensor client --identity-key`). */
export const identityOf = (secretKey: Uint8Array): Identity => ({ secretKey, publicKey: nobleEd25519.getPublicKey(secretKey) });

const encoder = new TextEncoder();

/** What a client signs in advertise-keys: the protocol, session, round, its id and its two public keys. */
export function keysTranscript(session: string, round: number, client: string, encryptionKey: Uint8Array, maskingKey: Uint8Array): Uint8Array {
  const head = encoder.encode(`${PROTOCOL}|advertise-keys|${session}|${round}|${client.length}:${client}|`);
  const out = new Uint8Array(head.length + encryptionKey.length + maskingKey.length);
  out.set(head);
  out.set(encryptionKey, head.length);
  out.set(maskingKey, head.length + encryptionKey.length);
  return out;
}

/**
 * What a client signs in the consistency check (Bonawitz et al. 2017, round 3; Bell et al. 2020):
 * the protocol, session, round and the survivor set it was told, in id order, length-prefixed.
 * Two clients' signatures verify over one transcript only if they were told the same set.
 */
export function survivorsTranscript(session: string, round: number, survivors: readonly string[]): Uint8Array {
  const ids = [...survivors].sort().map((id) => `${id.length}:${id}`).join(",");
  return encoder.encode(`${PROTOCOL}|consistency-check|${session}|${round}|${ids}`);
}

export const signTranscript = (identity: Identity, transcript: Uint8Array): Uint8Array => ed25519.sign(transcript, identity.secretKey);

/** Whether `signature` is `publicKey`'s over `transcript` (false for a malformed key or signature). */
export function verifyTranscript(publicKey: Uint8Array, transcript: Uint8Array, signature: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, transcript, publicKey);
  } catch {
    return false;
  }
}

/**
 * The identity keys a client has seen, by peer id (trust on first use). `check` pins an unknown
 * peer's key and says whether a known peer's key is the pinned one.
 */
export class IdentityPins {
  private readonly pinned = new Map<string, string>();

  check(peer: string, publicKey: string): boolean {
    const known = this.pinned.get(peer);
    if (known === undefined) {
      this.pinned.set(peer, publicKey);
      return true;
    }
    return known === publicKey;
  }
}
