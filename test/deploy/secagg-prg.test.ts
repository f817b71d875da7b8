/**
 * The masks' PRG (src/deploy/secagg/random.ts): on Node it is OpenSSL's ChaCha20, in a browser
 * @noble/ciphers'. A Node client's pair mask must cancel a tab's, so the two must give the same
 * keystream, byte for byte, at every length (block edges, a word's tail) and for any key.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { keystream, keystreamSource, prgWords } from "../../src/deploy/secagg/random.js";

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
