/**
 * The reference interpreter's convolution and pooling: hand-computed values (TensorFlow's SAME
 * padding), and the gradient primitives against central differences of the interpreter's own
 * conv2d and max_pool.
 */
import { describe, expect, test } from "vitest";
import { conv2d, f32, maxPool2d, mul, program, sum } from "../../src/index.js";
import type { Attrs } from "../../src/ir/primitives.js";
import { emit, expectClose, plain, primitiveProgram, run, runLeaf, runRecord } from "./helpers.js";

const nine = [[[[1], [2], [3]], [[4], [5], [6]], [[7], [8], [9]]]];
const ones = (kh: number, kw: number) => Array.from({ length: kh }, () => Array.from({ length: kw }, () => [[1]]));

describe("conv2d", () => {
  const p = program({ x: f32([1, 3, 3, 1]), k2: f32([2, 2, 1, 1]), k3: f32([3, 3, 1, 1]) }, ({ x, k2, k3 }) => ({
    valid: conv2d(x, k2, { padding: "valid" }),
    same: conv2d(x, k2),
    sameStride2: conv2d(x, k2, { strides: 2 }),
    sameK3: conv2d(x, k3),
  }));
  const out = runRecord(p, { x: nine, k2: ones(2, 2), k3: ones(3, 3) });

  test.each([
    ["valid", [1, 2, 2, 1], [12, 16, 24, 28]],
    // Total padding 1: none before, one row and column after.
    ["same", [1, 3, 3, 1], [12, 16, 9, 24, 28, 15, 15, 17, 9]],
    ["sameStride2", [1, 2, 2, 1], [12, 9, 15, 9]],
    // Total padding 2: one before, one after.
    ["sameK3", [1, 3, 3, 1], [12, 21, 16, 27, 45, 33, 24, 39, 28]],
  ])("%s", (name, shape, data) => expect(plain(out[name])).toEqual({ shape, data }));

  test("contracts input channels into output features", () => {
    const q = program({ x: f32([1, 1, 1, 2]), k: f32([1, 1, 2, 2]) }, ({ x, k }) => conv2d(x, k));
    expect(plain(run(q, { x: [[[[1, 2]]]], k: [[[[1, 2], [3, 4]]]] })).data).toEqual([7, 10]);
  });
});

describe("max_pool, max_pool_grad and max_pool_pick", () => {
  test("valid and same windows", () => {
    const p = program({ x: f32([1, 4, 4, 1]), y: f32([1, 3, 3, 1]) }, ({ x, y }) => ({
      valid: maxPool2d(x, 2, { padding: "valid" }),
      same: maxPool2d(y, 2),
      overlapping: maxPool2d(y, 3, { strides: 1 }),
    }));
    const grid = [[1, 3, 2, 4], [8, 5, 7, 6], [9, 12, 11, 10], [16, 14, 13, 15]].map((row) => row.map((v) => [v]));
    const out = runRecord(p, { x: [grid], y: nine });
    expect(plain(out.valid)).toEqual({ shape: [1, 2, 2, 1], data: [8, 7, 16, 15] });
    expect(plain(out.same)).toEqual({ shape: [1, 2, 2, 1], data: [5, 6, 8, 9] });
    expect(plain(out.overlapping).data).toEqual([5, 6, 6, 8, 9, 9, 8, 9, 9]);
  });

  test("a tie sends the cotangent to the window's first maximum", () => {
    const attrs = { window: [2, 2], strides: [2, 2], padding: "valid" };
    const p = primitiveProgram("max_pool_grad", { x: f32([1, 2, 2, 1]), ct: f32([1, 1, 1, 1]) }, attrs);
    expect(plain(run(p, { x: [[[[5], [5]], [[5], [5]]]], ct: [[[[3]]]] })).data).toEqual([3, 0, 0, 0]);
  });

  test("overlapping windows add their cotangents at a shared maximum", () => {
    const attrs = { window: [1, 2], strides: [1, 1], padding: "valid" };
    const p = primitiveProgram("max_pool_grad", { x: f32([1, 1, 3, 1]), ct: f32([1, 1, 2, 1]) }, attrs);
    expect(plain(run(p, { x: [[[[1], [3], [2]]]], ct: [[[[1], [2]]]] })).data).toEqual([0, 3, 0]);
  });

  test("max_pool_pick takes each window's value of t at its first maximum of x", () => {
    const attrs = { window: [2, 2], strides: [2, 2], padding: "valid" };
    const p = primitiveProgram("max_pool_pick", { x: f32([1, 2, 4, 1]), t: f32([1, 2, 4, 1]) }, attrs);
    // Left window: max 3 at (0,1), t there 20. Right window: a tie of 5s, the first at (0,2), t 30.
    const x = [[[[1], [3], [5], [5]], [[2], [0], [5], [4]]]];
    const t = [[[[10], [20], [30], [31]], [[40], [50], [60], [70]]]];
    expect(plain(run(p, { x, t }))).toEqual({ shape: [1, 1, 2, 1], data: [20, 30] });
  });
});

/** Distinct values in [-1, 1), spaced 2/n apart, in a scrambled order. */
const scrambled = (n: number, seed: number): number[] => Array.from({ length: n }, (_, i) => (((i * 37 + seed) % n) * 2) / n - 1);

/** Central differences of a scalar function of a flat vector. */
function centralDifferences(f: (v: number[]) => number, at: readonly number[], eps = 1e-3): number[] {
  return at.map((_, i) => {
    const shifted = (delta: number) => f(at.map((v, j) => (j === i ? v + delta : v)));
    return (shifted(eps) - shifted(-eps)) / (2 * eps);
  });
}

const tensorOf = (shape: number[], data: number[]) => ({ shape, data });
const outDim = (size: number, k: number, stride: number, padding: string) =>
  padding === "same" ? Math.ceil(size / stride) : Math.ceil((size - k + 1) / stride);

const windowCases = [
  { padding: "same", strides: [1, 1] },
  { padding: "valid", strides: [1, 1] },
  { padding: "same", strides: [2, 1] },
  { padding: "valid", strides: [2, 2] },
] as const;

describe("gradients against central differences", () => {
  const [n, h, w, c, kh, kw, features] = [2, 5, 4, 3, 3, 2, 2];
  const xShape = [n, h, w, c];

  test.each(windowCases)("conv2d $padding strides $strides", ({ padding, strides }) => {
    const attrs: Attrs = { padding, strides: [...strides] };
    const fShape = [kh, kw, c, features];
    const outShape = [n, outDim(h, kh, strides[0], padding), outDim(w, kw, strides[1], padding), features];
    const specs = { x: f32(xShape), filter: f32(fShape), weights: f32(outShape) };
    const loss = program(specs, ({ x, filter, weights }) => sum(mul(conv2d(x, filter, { padding, strides }), weights)));
    const grads = program(specs, ({ x, filter, weights }) => ({
      x: emit("conv2d_grad_input", [weights, filter, x], attrs),
      filter: emit("conv2d_grad_filter", [x, weights, filter], attrs),
    }));
    const x = scrambled(n * h * w * c, 1);
    const filter = scrambled(kh * kw * c * features, 2);
    const weights = scrambled(outShape.reduce((a, b) => a * b), 3);
    const lossAt = (xv: number[], fv: number[]) =>
      runLeaf(loss, { x: tensorOf(xShape, xv), filter: tensorOf(fShape, fv), weights: tensorOf(outShape, weights) }).data[0]!;
    const analytic = runRecord(grads, { x: tensorOf(xShape, x), filter: tensorOf(fShape, filter), weights: tensorOf(outShape, weights) });
    expectClose(plain(analytic.x).data, centralDifferences((xv) => lossAt(xv, filter), x), 8);
    expectClose(plain(analytic.filter).data, centralDifferences((fv) => lossAt(x, fv), filter), 8);
  });

  test.each(windowCases)("max_pool $padding strides $strides", ({ padding, strides }) => {
    const window = 2;
    const attrs: Attrs = { window: [window, window], padding, strides: [...strides] };
    const outShape = [n, outDim(h, window, strides[0], padding), outDim(w, window, strides[1], padding), c];
    const specs = { x: f32(xShape), weights: f32(outShape) };
    const loss = program(specs, ({ x, weights }) => sum(mul(maxPool2d(x, window, { padding, strides }), weights)));
    const grad = program(specs, ({ x, weights }) => emit("max_pool_grad", [x, weights], attrs));
    // Distinct inputs 2/120 apart: a step of 1e-3 never changes which element is a window's maximum.
    const x = scrambled(n * h * w * c, 5);
    const weights = scrambled(outShape.reduce((a, b) => a * b), 7);
    const lossAt = (xv: number[]) => runLeaf(loss, { x: tensorOf(xShape, xv), weights: tensorOf(outShape, weights) }).data[0]!;
    const analytic = runLeaf(grad, { x: tensorOf(xShape, x), weights: tensorOf(outShape, weights) });
    expectClose(analytic.data, centralDifferences(lossAt, x), 8);
  });
});
