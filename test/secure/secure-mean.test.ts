/**
 * secureMean: the uniform mean secureSum(x) / n, and the weighted mean
 * secureSum(w x) / secureSum(w), within the quantization of their sums; private data released
 * through secureSum only; bad weights are FT312, a reused key FT111.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, i32, program, reduceWeightedMean, secureMean, secureSum } from "../../src/index.js";
import { host, read } from "../lib/helpers.js";
import { ftFailureAsync as failure } from "../privacy/failure.js";

const values = [0.5, -0.25, 0.75, 0.1, -0.9, 0.3, 0.2, 0.6, -0.4];
const rows = host([3, 3], values);
const column = (j: number) => [0, 1, 2].map((i) => values[i * 3 + j]!);
const meanOf = (xs: readonly number[]) => xs.reduce((s, v) => s + v, 0) / xs.length;


describe("secureMean", () => {
  test("uniform: equals the mean over the cohort, within the quantization 1 / (2 scale)", async () => {
    const p = program({ x: atClients(f32([3]), { private: true }), key: atServer(i32([2])) }, ({ x, key }) => secureMean(x, { bits: 20, key, range: [-1, 1], scale: 1000 }));
    const out = (await read(await p.run({ x: rows, key: [3, 4] }))) as unknown as number[];
    out.forEach((v, j) => expect(Math.abs(v - meanOf(column(j)))).toBeLessThanOrEqual(1 / 2000 + 1e-6));
    // The mean of private data is released by the masked sum: exact, no DP, and listed as such.
    expect(p.privacy).toEqual(["secureSum #0: exact sum, no DP (masks simulated in one process), at least 2 clients, called once"]);
  });

  test("weighted by i32 or f32 weights: equals sum(w x) / sum(w), as reduceWeightedMean computes it", async () => {
    const weights = [3, 1, 6];
    const want = [0, 1, 2].map((j) => column(j).reduce((s, v, i) => s + v * weights[i]!, 0) / 10);
    const plain = program({ x: atClients(f32([3])), w: atClients(f32([])) }, ({ x, w }) => reduceWeightedMean(x, w));
    const reference = (await read(await plain.run({ x: rows, w: weights }))) as unknown as number[];
    reference.forEach((v, j) => expect(v).toBeCloseTo(want[j]!, 6));
    for (const dtype of ["int32", "float32"] as const) {
      const spec = dtype === "int32" ? i32([]) : f32([]);
      const p = program({ x: atClients(f32([3]), { private: true }), w: atClients(spec, { private: true }), key: atServer(i32([2])) }, ({ x, w, key }) =>
        secureMean(x, { bits: 24, key, range: [-1, 1], scale: 1000, weights: w, maxWeight: 10 }),
      );
      const out = (await read(await p.run({ x: rows, w: weights, key: [5, 6] }))) as unknown as number[];
      // Each weighted value is within 1 / (2 scale) of w x; the f32 weights' sum within 3 / (2 scale) of 10.
      out.forEach((v, j) => expect(Math.abs(v - want[j]!)).toBeLessThan(dtype === "int32" ? 3 / 2000 / 10 + 1e-6 : 2e-4));
      expect(p.privacy).toHaveLength(2);
    }
  });

  test("a tree's leaves are averaged leaf by leaf", async () => {
    const p = program({ x: atClients({ a: f32([3]), b: f32([]) }), key: atServer(i32([2])) }, ({ x, key }) => secureMean(x, { bits: 20, key, range: [-1, 1], scale: 1000 }));
    const out = (await read(await p.run({ x: { a: rows, b: [0.2, 0.4, 0.9] }, key: [1, 1] }))) as unknown as { a: number[]; b: number };
    expect(out.a[0]).toBeCloseTo(meanOf(column(0)), 3);
    expect(out.b).toBeCloseTo(0.5, 3);
  });

  test("bad weights are FT312; its key feeds one release (FT111)", async () => {
    const inputs = { x: atClients(f32([3])), w: atClients(f32([])), s: atServer(f32([])), key: atServer(i32([2])) };
    const loose = secureMean as (...args: unknown[]) => never;
    const options = { bits: 24, range: [-1, 1], scale: 1000 };
    const bad = (extra: (i: { w: unknown; s: unknown }) => object) => failure(() => program(inputs, ({ x, w, s, key }) => loose(x, { ...options, key, ...extra({ w, s }) })));
    expect((await bad(({ w }) => ({ weights: w }))).message).toMatch(/^FT312: secureSum maxWeight: expected a finite number > 0/);
    expect((await bad(({ s }) => ({ weights: s, maxWeight: 10 }))).message).toBe("FT312: secureSum weights: expected a CLIENTS scalar, f32[] or i32[], got f32[]@SERVER");
    expect((await bad(() => ({ maxWeight: 10 }))).message).toMatch(/^FT312: secureSum maxWeight: is the weights' bound/);
    expect((await failure(() => program(inputs, ({ key }) => loose({}, { ...options, key })))).message).toBe("FT312: secureSum argument: an empty tree has no mean");
    const reused = await failure(() =>
      program(inputs, ({ x, key }) => ({ sum: secureSum(x, { bits: 20, key, range: [-1, 1], scale: 1000 }), mean: secureMean(x, { bits: 20, key, range: [-1, 1], scale: 1000 }) })),
    );
    expect(reused.code).toBe("FT111");
  });
});
