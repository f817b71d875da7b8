/**
 * OpenSSL through Node's crypto module, where this folder runs on Node: found at run time
 * (process.getBuiltinModule, Node 20.16+), so that the page's bundle keeps no node:* import; in
 * a browser, and on an older Node, `openSsl` is undefined and the protocol runs on @noble's
 * JavaScript. What it serves computes the same bytes as @noble's, by the same standards, 10-30
 * times faster: the masks' ChaCha20 keystream (RFC 8439; random.ts) and X25519 (RFC 7748;
 * keys.ts), which take most of a SecAgg+ client's time (bench/secagg-protocol.ts). Ed25519
 * signatures stay on @noble everywhere: verifiers differ on edge-case signatures (cofactored or
 * not), and a Node client and a tab must accept the same ones.
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
}

export const openSsl = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.("node:crypto") as NodeCrypto | undefined;

// RFC 8410's DER forms of a raw X25519 key: a fixed prefix, then the 32 key bytes.
const PKCS8_PREFIX = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20]);
const SPKI_PREFIX = new Uint8Array([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00]);
const KEY_LENGTH = 32;

const prefixed = (prefix: Uint8Array, key: Uint8Array): Uint8Array => {
  if (key.length !== KEY_LENGTH) throw new Error(`an X25519 key has ${KEY_LENGTH} bytes, not ${key.length}`);
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
const privateKeys = new WeakMap<Uint8Array, { readonly bytes: Uint8Array; readonly key: KeyObjectLike }>();

function privateKeyOf(crypto: NodeCrypto, secretKey: Uint8Array): KeyObjectLike {
  const cached = privateKeys.get(secretKey);
  // The bytes are compared too: an array refilled in place (a zeroed secret) is a new key.
  if (cached !== undefined && cached.bytes.every((b, i) => b === secretKey[i])) return cached.key;
  const key = crypto.createPrivateKey({ key: prefixed(PKCS8_PREFIX, secretKey), format: "der", type: "pkcs8" });
  privateKeys.set(secretKey, { bytes: secretKey.slice(), key });
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
