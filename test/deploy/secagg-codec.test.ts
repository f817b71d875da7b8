/** The wire's base64 against Node's own encoder, for every tail length and random bytes; the masked words' byte order. */
import { describe, expect, it } from "vitest";
import { fromBase64, readWords, toBase64, writeWords } from "../../src/deploy/secagg/codec.js";

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

  it("writes uint32 words little-endian at any offset and reads them back from any alignment", () => {
    const words = crypto.getRandomValues(new Uint32Array(1001));
    for (const offset of [0, 1, 2, 3, 7]) {
      const out = new Uint8Array(offset + 4 * words.length + 1);
      writeWords(words, out, offset);
      expect(Buffer.from(out.buffer).readUInt32LE(offset + 4)).toBe(words[1]);
      expect(readWords(out.subarray(offset, offset + 4 * words.length))).toEqual(words);
      // As ws hands a message to the server: a Node Buffer, a view into a larger allocation.
      expect(readWords(Buffer.from(out.buffer).subarray(offset, offset + 4 * words.length))).toEqual(words);
    }
  });
});
