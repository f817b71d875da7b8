/**
 * The reference interpreter on the operations of issue 14 item 2 (logsumexp, cumsum, take,
 * sort/argsort/topk, layerNorm), against values computed by hand, and their gradients where
 * the formula is known in closed form.
 */
import { describe, expect, test } from "vitest";
import { constant, cumsum, f32, grad, i32, logsumexp, mul, program, sum, take } from "../../src/index.js";
import { expectClose, plain, runLeaf, runRecord } from "./helpers.js";

describe("logsumexp", () => {
  const p = program({ x: f32([2, 3]) }, ({ x }) => ({
    rows: logsumexp(x, -1),
    kept: logsumexp(x, 0, true),
    all: logsumexp(x),
    // Without the shift, exp(1000) overflows to inf.
    large: logsumexp(constant([1000, 1000]), 0),
  }));
  const out = runRecord(p, { x: [[0, Math.log(2), Math.log(3)], [1, 1, 1]] });
  test("values", () => {
    expectClose(plain(out.rows).data, [Math.log(6), 1 + Math.log(3)]);
    expect(plain(out.kept).shape).toEqual([1, 3]);
    expectClose(plain(out.kept).data, [Math.log(1 + Math.E), Math.log(2 + Math.E), Math.log(3 + Math.E)]);
    expectClose(plain(out.all).data, [Math.log(6 + 3 * Math.E)]);
    expectClose(plain(out.large).data, [1000 + Math.log(2)]);
  });
  test("its gradient is softmax, also for large entries and ties in the max", () => {
    const g = program({ x: f32([4]) }, ({ x }) => grad((v: typeof x) => sum(logsumexp(v, 0)))(x));
    expectClose(runLeaf(g, { x: [1000, 1000, 999, 0] }).data, [1, 1, Math.exp(-1), 0].map((e) => e / (2 + Math.exp(-1))));
  });
});

describe("cumsum", () => {
  const p = program({ x: f32([2, 3]), n: i32([4]) }, ({ x, n }) => ({
    rows: cumsum(x),
    columns: cumsum(x, 0),
    exclusive: cumsum(x, -1, { exclusive: true }),
    reverse: cumsum(x, 1, { reverse: true }),
    both: cumsum(x, 1, { exclusive: true, reverse: true }),
    counts: cumsum(n),
  }));
  const out = runRecord(p, { x: [[1, 2, 3], [4, 5, 6]], n: [1, 0, 2, 5] });
  test.each([
    ["rows", [1, 3, 6, 4, 9, 15]],
    ["columns", [1, 2, 3, 5, 7, 9]],
    ["exclusive", [0, 1, 3, 0, 4, 9]],
    ["reverse", [6, 5, 3, 15, 11, 6]],
    ["both", [5, 3, 0, 11, 6, 0]],
    ["counts", [1, 1, 3, 8]],
  ])("%s", (name, data) => expect(plain(out[name]).data).toEqual(data));

  test("its gradient is the running sum the other way", () => {
    // d/dx_j of sum_i w_i y_i with y = cumsum(x) is the sum of w_i over i >= j (over i > j when exclusive).
    const g = program({ x: f32([4]) }, ({ x }) => ({
      inclusive: grad((v: typeof x) => sum(mul(cumsum(v), constant([1, 2, 3, 4]))))(x),
      exclusiveReverse: grad((v: typeof x) => sum(mul(cumsum(v, 0, { exclusive: true, reverse: true }), constant([1, 2, 3, 4]))))(x),
    }));
    const grads = runRecord(g, { x: [0.5, -1, 2, 3] });
    expect(plain(grads.inclusive).data).toEqual([10, 9, 7, 4]);
    expect(plain(grads.exclusiveReverse).data).toEqual([0, 1, 3, 6]);
  });

  test("an unknown option or a bad axis is an error with its code", () => {
    expect(() => program({ x: f32([3]) }, ({ x }) => cumsum(x, 0, { inclusive: true } as never))).toThrow(/FT305: cumsum inclusive/);
    expect(() => program({ x: f32([3]) }, ({ x }) => cumsum(x, 1 as never))).toThrow(/FT204/);
  });
});

describe("take", () => {
  const table = [[1, 2], [3, 4], [5, 6]];
  const p = program({ x: f32([3, 2]), ids: i32([2, 2]) }, ({ x, ids }) => ({
    rows: take(x, ids),
    columns: take(x, constant([1, 1, 0], "int32"), 1),
    outside: take(x, constant([-1, 3, 2], "int32")),
  }));
  const out = runRecord(p, { x: table, ids: [[2, 0], [0, 0]] });
  test("rows and columns", () => {
    expect(plain(out.rows)).toEqual({ shape: [2, 2, 2], data: [5, 6, 1, 2, 1, 2, 1, 2] });
    expect(plain(out.columns)).toEqual({ shape: [3, 3], data: [2, 2, 1, 4, 4, 3, 6, 6, 5] });
  });
  test("an index outside the axis picks zeros", () => expect(plain(out.outside).data).toEqual([0, 0, 0, 0, 5, 6]));
  test("its gradient adds each row's cotangent where the row came from, repeats included", () => {
    const g = program({ x: f32([3, 2]) }, ({ x }) =>
      grad((v: typeof x) => sum(mul(take(v, constant([2, 0, 0, 5], "int32")), constant([[1, 10], [2, 20], [3, 30], [4, 40]]))))(x),
    );
    expect(plain(runLeaf(g, { x: table })).data).toEqual([5, 50, 0, 0, 1, 10]);
  });
  test("indices must be int32", () => {
    expect(() => program({ x: f32([3, 2]), ids: f32([2]) }, ({ x, ids }) => take(x, ids as never))).toThrow(/FT205: take/);
  });
});
