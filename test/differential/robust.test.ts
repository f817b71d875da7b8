/**
 * The robust aggregators (src/front/robust.ts) against values worked out by hand, on the
 * reference interpreter and on cpu, wasm and onnx, and webgpu where Dawn finds an adapter (the
 * batched path: sorts, a Gram matrix and comparisons along the client axis), with their
 * gradients.
 */
import { expect, test } from "vitest";
import * as ft from "../../src/index.js";
import { webgpu } from "../helpers/test-backends.js";
import { checkAgreement } from "./harness.js";

const { atClients, f32, grad, krum, map, program, reduceMedian, reduceTrimmedMean, sum, mul, clipByNorm, zeroAboveNorm, globalNorm } = ft;

const backends = ["cpu", "wasm", "onnx", ...(webgpu.available ? (["webgpu"] as const) : [])] as const;
const data = (tree: unknown) => tree as Record<string, { data: Float64Array }>;
const values = (t: { data: Float64Array }) => Array.from(t.data);

// Five clients' two-coordinate updates; client 4 is an outlier in both coordinates.
const x = [[1, -1], [2, 0], [3, 5], [4, 1], [100, -50]];

test("median, trimmed mean and Krum of five clients match the values worked out by hand", async () => {
  const p = program({ x: atClients(f32([2])), y: atClients(f32([])) }, ({ x, y }) => ({
    median: reduceMedian(x),
    trimmed: reduceTrimmedMean(x, { trim: 0.2 }),
    untrimmed: reduceTrimmedMean(x, { trim: 0 }),
    tree: reduceMedian({ a: x, b: y }),
    krum1: krum({ a: x, b: y }, { byzantine: 1 }),
    krum3: krum(x, { byzantine: 1, select: 3 }),
    // The gradient reaches the kept clients only: 1 / kept each.
    gradMedian: grad((v: typeof x) => sum(reduceMedian(v)))(x),
    gradTrimmed: grad((v: typeof x) => sum(mul(reduceTrimmedMean(v, { trim: 0.2 }), ft.constant([1, 2]))))(x),
    gradKrum: grad((v: typeof x) => sum(krum(v, { byzantine: 1, select: 2 })))(x),
  }));
  const y = [0, 1, 2, 3, 4];
  const out = data(await checkAgreement({ program: p, code: "robust", inputs: { x, y }, clients: 5 }, backends));
  // Coordinate 0 sorted: 1 2 3 4 100; coordinate 1: -50 -1 0 1 5.
  expect(values(out.median!)).toEqual([3, 0]);
  // floor(0.2 * 5) = 1 dropped from each end: (2+3+4)/3, (-1+0+1)/3.
  expect(values(out.trimmed!)[0]).toBeCloseTo(3);
  expect(values(out.trimmed!)[1]).toBeCloseTo(0);
  expect(values(out.untrimmed!)[0]).toBeCloseTo(22);
  expect(values(data(out.tree!).b!)).toEqual([2]);
  // Krum, f = 1: C - f - 2 = 2 nearest others. Squared distances: d(0,1)=2, d(0,2)=40, d(0,3)=13, d(1,2)=26,
  // d(1,3)=5, d(2,3)=17; client 4 is far from all. Scores: 0: 2+13=15, 1: 2+5=7, 2: 17+26=43, 3: 5+13=18.
  // With the leaf b = client index added, d grows by (i-j)^2: 0: (2+1)+(13+9)=25, 1: (2+1)+(5+4)=12, 3: (5+4)+(13+9)=31.
  expect(values(data(out.krum1!).a!)).toEqual([2, 0]);
  // Multi-Krum, 3 lowest of x alone: clients 1 (7), 0 (15), 3 (18): mean (7/3, 0).
  expect(values(out.krum3!)[0]).toBeCloseTo(7 / 3);
  expect(values(out.krum3!)[1]).toBeCloseTo(0);
  // The median of coordinate 0 is client 2's value, of coordinate 1 client 1's.
  expect(values(out.gradMedian!)).toEqual([0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
  expect(values(out.gradTrimmed!).map((v) => Math.round(v * 3))).toEqual([0, 2, 1, 2, 1, 0, 1, 2, 0, 0]);
  expect(values(out.gradKrum!)).toEqual([0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0, 0, 0]);
});

test("the median of an even cohort is the mean of the two middle clients", async () => {
  const p = program({ x: atClients(f32([])) }, ({ x }) => reduceMedian(x));
  const out = await checkAgreement({ program: p, code: "median-even", inputs: { x: [4, -1, 10, 2] }, clients: 4 }, backends);
  expect(values(out as never)).toEqual([3]);
});

test("norm clipping and zeroing bound each client's whole update tree", async () => {
  const p = program({ x: atClients(f32([2])), y: atClients(f32([])) }, ({ x, y }) => ({
    clipped: map((a, b) => clipByNorm({ a, b }, 5), x, y),
    zeroed: map((a, b) => zeroAboveNorm({ a, b }, 5), x, y),
    norms: map((a, b) => globalNorm({ a, b }), x, y),
  }));
  // Client 0: (3, 4, 0), norm 5, kept; client 1: (6, 8, 0), norm 10, halved or zeroed.
  const out = data(await checkAgreement({ program: p, code: "norm-bounds", inputs: { x: [[3, 4], [6, 8]], y: [0, 0] }, clients: 2 }, backends));
  expect(values(data(out.clipped!).a!)).toEqual([3, 4, 3, 4]);
  expect(values(data(out.zeroed!).a!)).toEqual([3, 4, 0, 0]);
  expect(values(out.norms!)).toEqual([5, 10]);
});

test("a cohort too small for the aggregator is FT321 on every path", async () => {
  const p = program({ x: atClients(f32([2])) }, ({ x }) => krum(x, { byzantine: 1 }));
  await expect(p.run({ x: [[1, 2], [3, 4], [5, 6], [7, 8]] }, { backend: "cpu" })).rejects.toThrow(/FT321.*C > 2f \+ 2.*f = 1 of C = 4/);
  expect(() => ft.interpret(p.ir, { x: [[1, 2], [3, 4], [5, 6], [7, 8]] })).toThrow(/FT321/);
  expect(() => program({ x: atClients(f32([2])) }, ({ x }) => reduceTrimmedMean(x, { trim: 0.5 }))).toThrow(/FT321: reduceTrimmedMean: the trim fraction must be in \[0, 0.5\), got 0.5/);
  await p.dispose();
});

test("inside a per-client function the robust aggregators are FT105, as every reduction is, also on a captured CLIENTS value", () => {
  const inside = (aggregate: (x: never) => unknown) => () =>
    program({ x: atClients(f32([2])), y: atClients(f32([2])) }, ({ x, y }) => map((m) => mul(m, aggregate(y as never) as never), x));
  expect(inside((y) => reduceMedian(y))).toThrow(/^FT105: reduceMedian\(\)/);
  expect(inside((y) => reduceTrimmedMean(y, { trim: 0.2 }))).toThrow(/^FT105: reduceTrimmedMean\(\)/);
  expect(inside((y) => krum(y, { byzantine: 1 }))).toThrow(/^FT105: krum\(\)/);
});
