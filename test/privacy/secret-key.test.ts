/**
 * secretKey(): a key from node:crypto that feeds a SERVER key input, and that refuses to be
 * printed or written to JSON (FT334).
 */
import { inspect } from "node:util";
import { describe, expect, test, vi } from "vitest";
import { atClients, atServer, dpSum, f32, FedTensorError, i32, program, SecretKey, secretKey } from "../../src/index.js";
import { host, read } from "../lib/helpers.js";

describe("secretKey", () => {
  test("draws two int32 words, different every call (1000 draws, no repeat)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const key = secretKey();
      expect(key).toBeInstanceOf(SecretKey);
      expect(key.shape).toEqual([2]);
      expect(key.data).toBeInstanceOf(Int32Array);
      expect(key.data).toHaveLength(2);
      seen.add(Array.from(key.data).join(","));
    }
    // 64 random bits: a repeat among 1000 draws has probability ~ 3e-14.
    expect(seen.size).toBe(1000);
  });

  test("feeds a SERVER key input: dpSum's noise differs from key to key, and is the same for one key", async () => {
    const p = program({ u: atClients(f32([64]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) => dpSum(u, { clip: 1, noiseMultiplier: 1, key }));
    const zeros = host([2, 64], new Array(128).fill(0));
    const key = secretKey();
    const first = (await read(await p.run({ u: zeros, key }))) as unknown as number[];
    const again = (await read(await p.run({ u: zeros, key }))) as unknown as number[];
    const other = (await read(await p.run({ u: zeros, key: secretKey() }))) as unknown as number[];
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
  });

  test("attack: printing or serializing the key shows nothing of it (FT334 for JSON)", () => {
    const key = secretKey();
    const words = Array.from(key.data).map(String);
    const lines: string[] = [];
    const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.map((a) => (typeof a === "string" ? a : inspect(a))).join(" ")));
    try {
      console.log(key, { config: { key } });
    } finally {
      log.mockRestore();
    }
    for (const text of [...lines, String(key), `${key}`, inspect(key, { showHidden: true, depth: 5 })]) {
      expect(text).toContain("SecretKey(<redacted>)");
      for (const word of words) expect(text).not.toContain(word);
    }
    expect(() => JSON.stringify({ key })).toThrow(FedTensorError);
    expect(() => JSON.stringify(key)).toThrow("FT334: a secret key cannot be written to JSON: it is the secret of the releases it feeds");
  });
});
