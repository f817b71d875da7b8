/**
 * Secure sums streamed in groups (src/transform/mapreduce.ts): each chunk is one SecAgg+ group
 * whose masks cancel within it, under a key drawn fresh where the chunk runs; the server's
 * accumulator is the sum of the groups' sums. And clientIndex() streamed: the chunk's runner
 * gives each client its place in the cohort.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, foldIn, i32, map, mul, program, randomKey, reduceSum, secureSum, uniform, clientIndex } from "../../src/index.js";
import { maskDistances, maskedValues, quantize, secAggPlusNeighbours, secureSumHost, type SecureSumAttrs } from "../../src/ir/secure-sum.js";
import { chunkInputs, runStreamed } from "../../src/runtime/mapreduce.js";
import { runProgram } from "../../src/runtime/run.js";
import { mapReduceForm } from "../../src/transform/mapreduce.js";

const attrs: SecureSumAttrs = { bits: 24, neighbours: null, low: -1, high: 1, scale: 1000, minClients: 3 };
const summed = program({ key: atServer(i32([2])), x: atClients(f32([4])) }, ({ key, x }) =>
  secureSum(x, { bits: attrs.bits, key, range: [attrs.low, attrs.high], scale: attrs.scale, minClients: 3 }),
);

/** 10 clients' values in [-1, 1], client-major. */
const values = Float32Array.from({ length: 40 }, (_, i) => Math.fround(Math.sin(i * 1.7) * 0.9));
const chunkOf = (from: number, to: number) => ({ x: { shape: [to - from, 4], data: values.slice(from * 4, to * 4) } });
const groups = [[0, 3], [3, 6], [6, 10]] as const;

async function streamed(backend: "cpu" | "onnx", cuts: readonly (readonly [number, number])[] = groups): Promise<Float32Array> {
  const out = (await runStreamed(summed.ir, { inputs: { key: [7, 11] }, cohortSize: 10, chunks: cuts.map(([a, b]) => chunkOf(a, b)) }, { backend })) as tf.Tensor;
  const data = (await out.data()) as Float32Array;
  out.dispose();
  return data;
}

describe("a secure sum streamed in groups", () => {
  test("the result is the sum of the groups' sums, whatever each group's key: the same bytes on tfjs (cpu) and onnx, run after run", async () => {
    // Each group's sum as the definition computes it, under any key (the masks cancel), added in chunk order in float32.
    const expected = new Float32Array(4);
    groups.forEach(([a, b], g) => {
      const sum = secureSumHost("secureSum", values.slice(a * 4, b * 4), b - a, "float32", [g, 99], { ...attrs, grouped: true });
      sum.forEach((s, j) => (expected[j] = Math.fround(expected[j]! + s)));
    });
    const first = await streamed("cpu");
    expect(first).toEqual(expected);
    expect(await streamed("cpu")).toEqual(expected);
    expect(await streamed("onnx")).toEqual(expected);
    // Close to the true sum: within n / (2 scale) per coordinate.
    for (let j = 0; j < 4; j++) {
      let truth = 0;
      for (let i = 0; i < 10; i++) truth += values[i * 4 + j]!;
      expect(Math.abs(first[j]! - truth)).toBeLessThanOrEqual(10 / (2 * attrs.scale) + 1e-5);
    }
  });

  test("a chunk smaller than the sum's minClients is FT112: no group is smaller than the stated minimum", async () => {
    await expect(streamed("cpu", [[0, 2], [2, 10]])).rejects.toThrow(/^FT112: secureSum\(\) needs at least 3 clients, got 2/);
  });

  test("the server's accumulator is each group's sum; a client's value is masked by the words of its SecAgg+ neighbours", async () => {
    const form = mapReduceForm(summed.ir);
    // What a chunk's accumulate returns: exactly its group's sum (dequantized), nothing per client.
    const zero = (await runProgram(form.parts.zero.ir, {}, { backend: "cpu", clients: 1 })) as Record<string, tf.Tensor>;
    const acc = (await runProgram(form.parts.accumulate.ir, { ...Object.fromEntries(chunkInputs(form, [3, 4, 5])), ...zero, member0: chunkOf(3, 6).x }, { backend: "cpu" })) as Record<string, tf.Tensor>;
    expect(Object.keys(acc)).toEqual(["acc0"]);
    expect(acc.acc0!.shape).toEqual([4]);
    expect(Array.from(await acc.acc0!.data())).toEqual(secureSumHost("secureSum", values.slice(12, 24), 3, "float32", [1, 2], attrs));
    tf.dispose([...Object.values(zero), ...Object.values(acc)]);
    // Each masked value alone is the quantized value plus masks: different from it, and from one key to another.
    const q = Float64Array.from(values.slice(12, 24), (x) => quantize(x, "float32", attrs));
    const masked = maskedValues(q, 3, 4, [5, 6], { ...attrs, grouped: true });
    expect(Array.from(masked)).not.toEqual(Array.from(q));
    expect(Array.from(maskedValues(q, 3, 4, [5, 7], { ...attrs, grouped: true }))).not.toEqual(Array.from(masked));
  });

  test("grouped masks use the SecAgg+ graph (2 ceil(log2 n) neighbours), not all pairs, unless the sum names a neighbour count", () => {
    expect(secAggPlusNeighbours(100)).toBe(14);
    expect(maskDistances(100, null, true)).toBe(7);
    expect(maskDistances(100, null, false)).toBe(50);
    expect(maskDistances(100, 4, true)).toBe(2);
    expect(maskDistances(3, null, true)).toBe(1);
  });

  test("each chunk's group key is fresh from the CSPRNG", () => {
    const form = mapReduceForm(summed.ir);
    const keys = Array.from({ length: 4 }, () => Array.from((chunkInputs(form, [0]).get("groupKey0") as { data: Int32Array }).data));
    expect(new Set(keys.map(String)).size).toBe(4);
  });
});

test("clientIndex() streamed: chunks numbered by the runner give the whole program's result", async () => {
  const noisy = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(map((m) => mul(m, uniform(foldIn(randomKey(1), clientIndex()), [2])), x)));
  const x = { shape: [5, 2], data: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) };
  const whole = (await noisy.run({ x } as never, { backend: "cpu" })) as unknown as tf.Tensor;
  const part = (from: number, to: number) => ({ x: { shape: [to - from, 2], data: x.data.slice(from * 2, to * 2) } });
  const inOrder = (await runStreamed(noisy.ir, { inputs: {}, cohortSize: 5, chunks: [part(0, 2), part(2, 5)] }, { backend: "cpu" })) as tf.Tensor;
  // Chunks in another order, each client given its place in the cohort.
  const reordered = (await runStreamed(noisy.ir, { inputs: {}, cohortSize: 5, chunks: [part(3, 5), part(0, 3)], positions: (k) => (k === 0 ? [3, 4] : [0, 1, 2]) }, { backend: "cpu" })) as tf.Tensor;
  const w = Array.from(await whole.data());
  for (const t of [inOrder, reordered]) {
    const got = Array.from(await t.data());
    got.forEach((v, j) => expect(v).toBeCloseTo(w[j]!, 5));
  }
  tf.dispose([whole, inOrder, reordered]);
});
