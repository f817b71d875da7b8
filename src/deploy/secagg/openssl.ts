/**
 * OpenSSL through Node's crypto module, where this folder runs on Node: found at run time
 * (process.getBuiltinModule, Node 20.16+), so that the page's bundle keeps no node:* import; in
 * a browser, and on an older Node, `openSsl` is undefined and the protocol runs on @noble's
 * JavaScript. What it serves computes the same bytes as @noble's, by the same standards, 10-30
 * times faster: the masks' ChaCha20 keystream (RFC 8439; random.ts), X25519 (RFC 7748;
 * keys.ts) and Ed25519 (RFC 8032; identity.ts), which take most of a SecAgg+ client's time
 * (bench/secagg-protocol.ts).
 *
 * Ed25519 signatures are the same bytes from both (RFC 8032 signing is deterministic). The
 * verifiers differ on crafted edge cases: OpenSSL checks the cofactorless equation, @noble the
 * cofactored one, so a signature whose R or public key carries a small-order component can
 * verify at a tab and not at a Node client. Only the holder of the signing key can make one
 * (R enters the hash that binds the signature, and a key re-encoded by the server hashes to
 * another transcript), and a client that wants its signature to count at some peers and not at
 * others gains nothing it lacks already: it can sign any set or keys it likes. Honest
 * signatures verify everywhere.
 */

/** The key objects Node's crypto hands back, as far as this folder uses them. */
interface KeyObjectLike {
  export(options: { format: "der"; type: "spki" }): Uint8Array;
}

/** What this folder uses of Node's crypto module, typed here so that the page's bundle needs no Node types. */
interface NodeCrypto {
  createCipheriv(algorithm: "chacha20", key: Uint8Array, iv: Uint8Array): { update(data: Uint8Array): Uint8Array };
  createPrivateKey(input: { key: Uint8Array; format: "der"; type: "pkcs8" }): KeyObjectLike;
  createPublicKey(input: KeyObjectLike | { key: Uint8Array; format: "der"; type: "spki" }): KeyObjectLike;
  diffieHellman(options: { privateKey: KeyObjectLike; publicKey: KeyObjectLike }): Uint8Array;
  sign(algorithm: null, data: Uint8Array, key: KeyObjectLike): Uint8Array;
  verify(algorithm: null, data: Uint8Array, key: KeyObjectLike, signature: Uint8Array): boolean;
}

export const openSsl = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined;

// RFC 8410's DER forms of a raw X25519 or Ed25519 key: a fixed prefix, then the 32 key bytes
// (the algorithm's object identifier 1.3.101.110 or 1.3.101.112 is the prefix's 12th or 10th byte).
const X25519_OID = 0x6e;
const ED25519_OID = 0x70;
const pkcs8Prefix = (oid: number) => new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, oid, 0x04, 0x22, 0x04, 0x20]);
const spkiPrefix = (oid: number) => new Uint8Array([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, oid, 0x03, 0x21, 0x00]);
const PKCS8_PREFIX = pkcs8Prefix(X25519_OID);
const SPKI_PREFIX = spkiPrefix(X25519_OID);
const ED25519_PKCS8_PREFIX = pkcs8Prefix(ED25519_OID);
const ED25519_SPKI_PREFIX = spkiPrefix(ED25519_OID);
const KEY_LENGTH = 32;

const prefixed = (prefix: Uint8Array, key: Uint8Array): Uint8Array => {
  if (key.length !== KEY_LENGTH) throw new Error(`a 25519 key has ${KEY_LENGTH} bytes, not ${key.length}`);
  const der = new Uint8Array(prefix.length + KEY_LENGTH);
  der.set(prefix);
  der.set(key, prefix.length);
  return der;
};

/**
 * OpenSSL's key object of each secret key this process uses: importing one computes its public
 * key (a scalar multiplication), and a client uses its two secret keys with every neighbour.
 * Keyed by the array itself, so an entry lives as long as the key's bytes do.
 */
const privateKeys = new WeakMap<Uint8Array, { readonly bytes: Uint8Array; readonly prefix: Uint8Array; readonly key: KeyObjectLike }>();

function privateKeyOf(crypto: NodeCrypto, secretKey: Uint8Array, prefix = PKCS8_PREFIX): KeyObjectLike {
  const cached = privateKeys.get(secretKey);
  // The bytes are compared too: an array refilled in place (a zeroed secret) is a new key.
  if (cached !== undefined && cached.prefix === prefix && cached.bytes.every((b, i) => b === secretKey[i])) return cached.key;
  const key = crypto.createPrivateKey({ key: prefixed(prefix, secretKey), format: "der", type: "pkcs8" });
  privateKeys.set(secretKey, { bytes: secretKey.slice(), prefix, key });
  return key;
}

/** Drops this process's copy of a secret key that its owner erases (keys.ts's eraseSecretKey). */
export const forgetSecretKey = (secretKey: Uint8Array): void => {
  privateKeys.get(secretKey)?.bytes.fill(0);
  privateKeys.delete(secretKey);
};

/** X25519 with @noble/curves' interface: the public key of a secret key, and the shared secret (which refuses low-order points). */
export interface X25519 {
  getPublicKey(secretKey: Uint8Array): Uint8Array;
  getSharedSecret(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array;
}

export function openSslX25519(crypto: NodeCrypto): X25519 {
  return {
    getPublicKey: (secretKey) => crypto.createPublicKey(privateKeyOf(crypto, secretKey)).export({ format: "der", type: "spki" }).slice(SPKI_PREFIX.length),
    // OpenSSL refuses an all-zero result (a low-order public key), as @noble does.
    getSharedSecret: (secretKey, publicKey) =>
      new Uint8Array(crypto.diffieHellman({ privateKey: privateKeyOf(crypto, secretKey), publicKey: crypto.createPublicKey({ key: prefixed(SPKI_PREFIX, publicKey), format: "der", type: "spki" }) })),
  };
}

/** Ed25519 signing and verifying with @noble/curves' interface (verify: false for a malformed key or signature). */
export interface Ed25519 {
  sign(message: Uint8Array, secretKey: Uint8Array): Uint8Array;
  verify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

export function openSslEd25519(crypto: NodeCrypto): Ed25519 {
  return {
    // A client's identity key signs twice a round: its key object is kept as an X25519 key's is.
    sign: (message, secretKey) => new Uint8Array(crypto.sign(null, message, privateKeyOf(crypto, secretKey, ED25519_PKCS8_PREFIX))),
    verify: (signature, message, publicKey) => {
      if (signature.length !== 64 || publicKey.length !== KEY_LENGTH) return false;
      try {
        return crypto.verify(null, message, crypto.createPublicKey({ key: prefixed(ED25519_SPKI_PREFIX, publicKey), format: "der", type: "spki" }), signature);
      } catch {
        // A public key that is not a point on the curve.
        return false;
      }
    },
  };
}
