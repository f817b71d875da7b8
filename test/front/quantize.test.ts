/**
 * Stochastic quantization (src/front/quantize.ts): every value lands on one of the 2^b levels
 * between the leaf's min and max, the draws agree on every backend, the mean over many
 * clients' independent draws is the input within a stated statistical bound (unbiased), and
 * the bits a client sends are counted as the docs say.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { checkAgreement } from "../differential/harness.js";
import { webgpu } from "../helpers/test-backends.js";

const { atClients, atServer, broadcast, clientIndex, f32, foldIn, i32, map, program, quantizedBits, reduceMean, stochasticQuantize } = ft;

const x = [-1, -0.2, 0, 0.35, 1.4, 3, 2.999, -0.9];

test("quantized values sit on the leaf's 2^b levels, the same on every backend", async () => {
  const p = program({ x: atClients(f32([8])), key: atServer(i32([2])) }, ({ x, key }) =>
    map((v, k) => stochasticQuantize({ v, w: ft.mul(v, 2) }, foldIn(k, clientIndex()), { bits: 2 }), x, broadcast(key)),
  );
  const out = (await checkAgreement({ program: p, code: "quantize", inputs: { x: [x, x, x], key: [0, 7] }, clients: 3 }, ["cpu", "wasm", "onnx", ...(webgpu.available ? (["webgpu"] as const) : [])])) as Record<string, { data: Float64Array }>;
  const step = 4 / 3;
  for (const v of out.v!.data) expect(Math.abs((v + 1) / step - Math.round((v + 1) / step))).toBeLessThan(1e-5);
  // The minimum and maximum are levels themselves: they never move.
  expect(out.v!.data[0]).toBeCloseTo(-1, 6);
  expect(out.v!.data[5]).toBeCloseTo(3, 6);
  // Clients draw independently: not every client rounds the same way.
  const rows = [0, 1, 2].map((c) => Array.from(out.v!.data.slice(8 * c, 8 * c + 8)).join());
  expect(new Set(rows).size).toBeGreaterThan(1);
});

test("the mean of 4000 independent quantizations is the input (unbiased, within 5 standard errors)", async () => {
  const clients = 4000;
  const p = program({ x: atServer(f32([8])), key: atServer(i32([2])) }, ({ x, key }) =>
    reduceMean(map((v, k) => stochasticQuantize(v, foldIn(k, clientIndex()), { bits: 2 }), broadcast(x), broadcast(key))),
  );
  const out = (await p.run({ x, key: [0, 11] }, { backend: "onnx", clients })) as unknown as { data(): Promise<Float32Array>; dispose(): void };
  const mean = await out.data();
  out.dispose();
  await p.dispose();
  // Each draw is one of the two levels around x, step h apart: variance at most h^2 / 4, so the
  // mean's standard error is at most h / (2 sqrt(N)).
  const h = 4 / 3;
  const bound = (5 * h) / (2 * Math.sqrt(clients));
  x.forEach((v, i) => expect(Math.abs(mean[i]! - v)).toBeLessThan(bound));
});

test("bits sent: b per entry and two float32 bounds per leaf, against 32 per entry unquantized", () => {
  // The 2NN: 784x200 + 200 + 200x200 + 200 + 200x10 + 10 = 199,210 entries in 6 leaves.
  const sizes = [784 * 200, 200, 200 * 200, 200, 200 * 10, 10];
  expect(quantizedBits(sizes, 4)).toBe(199210 * 4 + 6 * 64);
  expect((32 * 199210) / quantizedBits(sizes, 4)).toBeCloseTo(7.996, 3);
  expect(() => program({ x: atServer(f32([2])), key: atServer(i32([2])) }, ({ x, key }) => stochasticQuantize(x, key, { bits: 0 }))).toThrow("FT302: stochasticQuantize() bits: the bits per coordinate must be a whole number from 1 to 16, got 0");
});
