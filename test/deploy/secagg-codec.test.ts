/** The wire's base64 against Node's own encoder, for every tail length and random bytes. */
import { describe, expect, it } from "vitest";
import { fromBase64, toBase64, wordsFromBase64, wordsToBase64 } from "../../src/deploy/secagg/codec.js";

describe("SecAgg+ codec", () => {
  it("encodes base64 as Buffer does and decodes it back", () => {
    for (let n = 0; n < 200; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      const text = toBase64(bytes);
      expect(text).toBe(Buffer.from(bytes).toString("base64"));
      expect(fromBase64(text)).toEqual(bytes);
    }
    expect(fromBase64("not base64!")).toBeNull();
  });

  it("round-trips uint32 words little-endian and refuses the wrong length", () => {
    const words = crypto.getRandomValues(new Uint32Array(1001));
    const text = wordsToBase64(words);
    expect(Buffer.from(text, "base64").readUInt32LE(4)).toBe(words[1]);
    expect(wordsFromBase64(text, 1001)).toEqual(words);
    expect(wordsFromBase64(text, 1000)).toBeNull();
  });
});
