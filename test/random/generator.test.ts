/**
 * Threefry-2x32-20 against the Random123 known-answer vectors (the ones JAX tests with), and
 * every draw bit-identical on onnx, wasm, cpu and the reference interpreter.
 */
import { describe, expect, test } from "vitest";
import { atServer, bernoulli, f32, foldIn, i32, normal, program, randomKey, randomPermutation, split, uniform } from "../../src/index.js";
import { threefry2x32 } from "../../src/ir/threefry.js";
import { emit } from "../interpret/helpers.js";
import { BACKENDS, runOn } from "./helpers.js";

const KNOWN_ANSWERS = [
  { key: [0, 0], counter: [0, 0], out: [0x6b200159, 0x99ba4efe] },
  { key: [0xffffffff, 0xffffffff], counter: [0xffffffff, 0xffffffff], out: [0x1cb996fc, 0xbb002be7] },
  { key: [0x13198a2e, 0x03707344], counter: [0x243f6a88, 0x85a308d3], out: [0xc4923a9c, 0x483df7a0] },
];
const signed = (words: readonly number[]) => words.map((w) => w | 0);

describe("Threefry-2x32-20", () => {
  test("the definition gives Random123's known answers", () => {
    for (const { key, counter, out } of KNOWN_ANSWERS) {
      expect(threefry2x32(key[0]!, key[1]!, counter[0]!, counter[1]!)).toEqual(signed(out));
    }
  });

  const blocks = program({ keys: atServer(i32([3, 2])), counters: atServer(i32([3, 2])) }, ({ keys, counters }) => ({
    out: emit("threefry2x32", [keys, counters]),
  }));
  const inputs = { keys: KNOWN_ANSWERS.map((k) => signed(k.key)), counters: KNOWN_ANSWERS.map((k) => signed(k.counter)) };
  const want = KNOWN_ANSWERS.flatMap((k) => signed(k.out));

  test.each([...BACKENDS, "reference"] as const)("%s computes the known answers", async (where) => {
    expect((await runOn(where, blocks, inputs)).out).toEqual(want);
  });
});

describe("draws are bit-identical on every backend", () => {
  const draws = program({ key: atServer(i32([2])), scale: atServer(f32([])) }, ({ key, scale }) => {
    const [a, b, c] = split(key, 3);
    const folded = foldIn(b, 7);
    return {
      keyFromSeed: randomKey(2 ** 32 + 5),
      split: a,
      folded,
      uniform: uniform(a, [5, 3]),
      shifted: uniform(folded, [7], { min: -2, max: 3 }),
      normal: normal(c, [100_001]),
      bernoulli: bernoulli(folded, 0.3, [64]),
      permutation: randomPermutation(c, 17),
      scaled: uniform(b, [3]),
      unused: scale,
    };
  });
  const inputs = { key: [0, 42], scale: 1 };

  test("onnx, wasm, cpu and the interpreter agree bit for bit", async () => {
    const results = await Promise.all([...BACKENDS, "reference"].map((w) => runOn(w as never, draws, inputs)));
    const [onnx, ...others] = results;
    for (const other of others) expect(other).toEqual(onnx);
    expect(onnx!.keyFromSeed).toEqual([1, 5]);
    expect(onnx!.split).toEqual(signed(threefry2x32(0, 42, 0, 0)));
    expect([...onnx!.permutation!].sort((x, y) => x - y)).toEqual(Array.from({ length: 17 }, (_, i) => i));
    for (const u of onnx!.uniform!) expect(u >= 0 && u < 1 && Number.isInteger(u * 2 ** 23)).toBe(true);
    for (const u of onnx!.shifted!) expect(u >= -2 && u < 3).toBe(true);
  });
});
