/**
 * SecAgg+ on Node runs its masks' PRG (ChaCha20), its key agreement (X25519) and its signatures
 * (Ed25519) on OpenSSL, in a browser on @noble's JavaScript (src/deploy/secagg/openssl.ts). A Node
 * client's pair mask must cancel a tab's, so the two must compute the same bytes: the keystream
 * at every length (block edges, a word's tail) and for any key; X25519's public keys and shared
 * secrets for any keys, non-canonical public keys included, and both must refuse a low-order
 * public key. Their signatures must be the same bytes, and honest ones verify under both.
 */
import { randomBytes } from "node:crypto";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { eraseSecretKey, newKeyPair } from "../../src/deploy/secagg/keys.js";
import { openSsl, openSslEd25519, openSslX25519 } from "../../src/deploy/secagg/openssl.js";
import { keystream, keystreamSource, prgWords } from "../../src/deploy/secagg/random.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("the masks' PRG", () => {
  it("is RFC 8439's ChaCha20 keystream (A.1, test vector 1: zero key, zero nonce, block 0)", () => {
    const expected = "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";
    for (const implementation of ["fastest", "noble"] as const) {
      expect(Buffer.from(keystream(new Uint8Array(32), 64, implementation)).toString("hex")).toBe(expected);
    }
  });

  it("is the same from OpenSSL and from @noble/ciphers at every length, for random keys", () => {
    // Node 20.16+ has process.getBuiltinModule: the comparison is between the two libraries.
    expect(keystreamSource).toBe("openssl");
    for (const bytes of [0, 1, 3, 4, 63, 64, 65, 127, 4096, 4100, 199_210 * 4]) {
      const key = randomBytes(32);
      const fastest = keystream(key, bytes);
      expect(fastest.byteOffset % 4).toBe(0);
      expect(Buffer.from(fastest).equals(Buffer.from(keystream(key, bytes, "noble")))).toBe(true);
    }
  });

  it("expands a seed into fresh words: two calls do not share a buffer", () => {
    const seed = randomBytes(32);
    const [a, b] = [prgWords(seed, 1000), prgWords(seed, 1000)];
    expect(a).toEqual(b);
    a[0] = a[0]! ^ 1;
    expect(a[0]).not.toBe(b[0]);
  });
});

describe("X25519 on OpenSSL", () => {
  const native = openSslX25519(openSsl!);

  it("gives @noble/curves' public keys and shared secrets, for random and non-canonical keys", () => {
    for (let i = 0; i < 50; i++) {
      const [a, b] = [randomBytes(32), randomBytes(32)];
      expect(hex(native.getPublicKey(a))).toBe(hex(x25519.getPublicKey(a)));
      const theirs = i % 10 === 9 ? Uint8Array.from(randomBytes(32), (v, k) => (k === 31 ? v | 0x80 : v)) : x25519.getPublicKey(b); // the top bit set: masked by both
      expect(hex(native.getSharedSecret(a, theirs))).toBe(hex(x25519.getSharedSecret(a, theirs)));
    }
    // RFC 7748 section 6.1's Alice and Bob.
    const alice = Buffer.from("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "hex");
    const bobPublic = Buffer.from("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", "hex");
    expect(hex(native.getPublicKey(alice))).toBe("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    expect(hex(native.getSharedSecret(alice, bobPublic))).toBe("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
  });

  it("refuses a low-order public key (an all-zero secret) and a key of the wrong length, as @noble does", () => {
    const mine = randomBytes(32);
    for (const bad of [new Uint8Array(32), Uint8Array.of(1, ...new Uint8Array(31)), new Uint8Array(31)]) {
      expect(() => native.getSharedSecret(mine, bad)).toThrow();
      expect(() => x25519.getSharedSecret(mine, bad)).toThrow();
    }
  });

  it("keys.ts's key pairs are @noble's, and an erased secret key is not used again from OpenSSL's copy", () => {
    const pair = newKeyPair((n) => randomBytes(n));
    expect(hex(pair.publicKey)).toBe(hex(x25519.getPublicKey(pair.secretKey)));
    const theirs = x25519.getPublicKey(randomBytes(32));
    expect(hex(native.getSharedSecret(pair.secretKey, theirs))).toBe(hex(x25519.getSharedSecret(pair.secretKey, theirs)));
    eraseSecretKey(pair.secretKey);
    expect(pair.secretKey.every((b) => b === 0)).toBe(true);
    // The zeroed bytes are a new (clamped) key: the result is theirs, not the erased key's.
    expect(hex(native.getSharedSecret(pair.secretKey, theirs))).toBe(hex(x25519.getSharedSecret(new Uint8Array(32), theirs)));
  });
});

describe("Ed25519", () => {
  const ed = openSslEd25519(openSsl!);

  it("signs as RFC 8032 says (7.1, tests 1 and 2) and verifies those signatures", () => {
    const vectors = [
      { secret: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", pub: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", message: "", signature: "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
      { secret: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", pub: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", message: "72", signature: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00" },
    ];
    for (const v of vectors) {
      const message = Buffer.from(v.message, "hex");
      expect(hex(ed.sign(message, Buffer.from(v.secret, "hex")))).toBe(v.signature);
      expect(ed.verify(Buffer.from(v.signature, "hex"), message, Buffer.from(v.pub, "hex"))).toBe(true);
    }
  });

  it("gives @noble/curves' signatures for random keys and messages, and agrees with it on honest, altered and malformed ones", () => {
    for (let i = 0; i < 20; i++) {
      const secret = new Uint8Array(randomBytes(32));
      const publicKey = ed25519.getPublicKey(secret);
      const message = new Uint8Array(randomBytes(i * 7));
      const signature = ed.sign(message, secret);
      expect(hex(signature)).toBe(hex(ed25519.sign(message, secret)));
      const altered = signature.slice();
      altered[i % 64] = altered[i % 64]! ^ (1 << (i % 8));
      const otherKey = ed25519.getPublicKey(new Uint8Array(randomBytes(32)));
      for (const [sig, msg, key] of [[signature, message, publicKey], [altered, message, publicKey], [signature, Uint8Array.of(...message, 0), publicKey], [signature, message, otherKey]] as const) {
        expect(ed.verify(sig, msg, key)).toBe(ed25519.verify(sig, msg, key, { zip215: false }));
      }
      expect(ed.verify(altered, message, publicKey)).toBe(false);
    }
    const secret = new Uint8Array(randomBytes(32));
    const signature = ed.sign(Uint8Array.of(1), secret);
    // Wrong lengths, and a public key that is no point on the curve, verify nothing rather than throw.
    expect(ed.verify(signature.subarray(0, 63), Uint8Array.of(1), ed25519.getPublicKey(secret))).toBe(false);
    expect(ed.verify(signature, Uint8Array.of(1), ed25519.getPublicKey(secret).subarray(0, 31))).toBe(false);
    expect(ed.verify(signature, Uint8Array.of(1), new Uint8Array(32).fill(0xff))).toBe(false);
  });
});
