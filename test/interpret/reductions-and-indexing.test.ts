/**
 * The reference interpreter on the operations of issue 14 item 2 (logsumexp, cumsum, take,
 * sort/argsort/topk, layerNorm), against values computed by hand, and their gradients where
 * the formula is known in closed form.
 */
import { describe, expect, test } from "vitest";
import { argsort, constant, cumsum, f32, grad, groupNorm, i32, layerNorm, logsumexp, mul, program, sort, sum, take, topk } from "../../src/index.js";
import { primitives } from "../../src/ir/primitives.js";
import { sequencePrimitives } from "../../src/ir/sequence-primitives.js";
import { multiOutputRules, tensorRules } from "../../src/interpret/reference.js";
import { onnxRules } from "../../src/lower/onnx/model.js";
import { tfjsRules } from "../../src/lower/tfjs-rules.js";
import { batchRules } from "../../src/transform/batch-rules.js";
import { jvpRules } from "../../src/transform/jvp-rules.js";
import { vjpRules } from "../../src/transform/vjp-rules.js";
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

describe("sort, argsort and topk", () => {
  const p = program({ x: f32([2, 4]), n: i32([5]) }, ({ x, n }) => ({
    rows: sort(x),
    rowsDown: sort(x, -1, true),
    columns: sort(x, 0),
    order: argsort(x),
    orderDown: argsort(x, 1, true),
    top: topk(x, 2),
    counts: sort(n, 0, true),
  }));
  const out = runRecord(p, { x: [[3, -1, 3, 0.5], [2, 2, 7, -4]], n: [4, -2, 9, 0, 4] });
  test.each([
    ["rows", [-1, 0.5, 3, 3, -4, 2, 2, 7]],
    ["rowsDown", [3, 3, 0.5, -1, 7, 2, 2, -4]],
    ["columns", [2, -1, 3, -4, 3, 2, 7, 0.5]],
    // Equal entries keep their order, in both directions.
    ["order", [1, 3, 0, 2, 3, 0, 1, 2]],
    ["orderDown", [0, 2, 3, 1, 2, 0, 1, 3]],
    ["counts", [9, 4, 4, 0, -2]],
  ])("%s", (name, data) => expect(plain(out[name]).data).toEqual(data));
  test("topk: the k largest and their positions", () => {
    const top = out.top as Record<string, never>;
    expect(plain(top.values)).toEqual({ shape: [2, 2], data: [3, 3, 7, 2] });
    expect(plain(top.indices)).toEqual({ shape: [2, 2], data: [0, 2, 2, 0] });
  });
  test("gradients go back to the positions the values came from", () => {
    const g = program({ x: f32([4]) }, ({ x }) => ({
      sorted: grad((v: typeof x) => sum(mul(sort(v), constant([1, 2, 3, 4]))))(x),
      top: grad((v: typeof x) => sum(mul(topk(v, 2).values, constant([10, 20]))))(x),
    }));
    const grads = runRecord(g, { x: [0.5, -3, 2, 1] });
    // Ascending: -3 (position 1), 0.5 (0), 1 (3), 2 (2).
    expect(plain(grads.sorted).data).toEqual([2, 1, 4, 3]);
    expect(plain(grads.top).data).toEqual([0, 0, 10, 20]);
  });
  test("k outside the axis is FT302, a bool operand FT205", () => {
    expect(() => program({ x: f32([2, 4]) }, ({ x }) => topk(x, 5))).toThrow(/FT302: topk\(\) k: 5/);
    expect(() => program({ x: f32([4]) }, ({ x }) => sort(mul(x, 1) as never, 0, "yes" as never))).toThrow(/FT305/);
  });
});

describe("layerNorm", () => {
  const [x, gamma, beta] = [[[1, 2, 3, 4], [-1, -1, 1, 1]], [1, 2, 1, 1], [0, 0, 1, 0]];
  const normalize = (row: number[], eps: number) => {
    const m = row.reduce((a, b) => a + b) / row.length;
    const v = row.reduce((a, b) => a + (b - m) ** 2, 0) / row.length;
    return row.map((e, i) => ((e - m) / Math.sqrt(v + eps)) * gamma[i]! + beta[i]!);
  };
  const specs = { x: f32([2, 4]), gamma: f32([4]), beta: f32([4]) };
  test("values: biased variance over the last axis, then scale and shift", () => {
    const p = program(specs, ({ x, gamma, beta }) => ({ standard: layerNorm(x, gamma, beta), wide: layerNorm(x, gamma, beta, 0.5) }));
    const out = runRecord(p, { x, gamma, beta });
    expectClose(plain(out.standard).data, x.flatMap((row) => normalize(row, 1e-5)));
    expectClose(plain(out.wide).data, x.flatMap((row) => normalize(row, 0.5)));
  });
  test("gradients with respect to x, gamma and beta match central differences", () => {
    const weights = [[0.5, -1, 2, 0.25], [1, 0, -0.5, 3]];
    const loss = (xs: number[][]) => xs.flatMap((row) => normalize(row, 1e-5)).reduce((a, e, i) => a + e * weights.flat()[i]!, 0);
    const p = program(specs, ({ x, gamma, beta }) => grad((v: typeof x) => sum(mul(layerNorm(v, gamma, beta), constant(weights))))(x));
    const h = 1e-6;
    const numeric = x.flat().map((_, j) => {
      const moved = (by: number) => loss(x.map((row, r) => row.map((e, c) => (r * 4 + c === j ? e + by : e))));
      return (moved(h) - moved(-h)) / (2 * h);
    });
    expectClose(plain(runLeaf(p, { x, gamma, beta })).data, numeric, 5);

    const q = program(specs, ({ x, gamma, beta }) => ({
      gamma: grad((g: typeof gamma) => sum(mul(layerNorm(x, g, beta), constant(weights))))(gamma),
      beta: grad((b: typeof beta) => sum(mul(layerNorm(x, gamma, b), constant(weights))))(beta),
    }));
    const out = runRecord(q, { x, gamma, beta });
    const standardized = x.map((row) => {
      const m = row.reduce((a, b) => a + b) / 4;
      const s = Math.sqrt(row.reduce((a, b) => a + (b - m) ** 2, 0) / 4 + 1e-5);
      return row.map((e) => (e - m) / s);
    });
    expectClose(plain(out.gamma).data, [0, 1, 2, 3].map((c) => weights[0]![c]! * standardized[0]![c]! + weights[1]![c]! * standardized[1]![c]!));
    expectClose(plain(out.beta).data, [0, 1, 2, 3].map((c) => weights[0]![c]! + weights[1]![c]!));
  });
  test("eps must be positive, gamma must broadcast", () => {
    expect(() => program(specs, ({ x, gamma, beta }) => layerNorm(x, gamma, beta, 0))).toThrow(/FT302: layerNorm\(\) eps/);
    expect(() => program({ x: f32([2, 4]), g: f32([3]) }, ({ x, g }) => layerNorm(x, g as never, g as never))).toThrow(/FT201/);
  });
});

describe("groupNorm", () => {
  // x [N=2, 2 positions, C=4] in 2 groups of 2 channels.
  const x = [[[1, 2, 3, 5], [0, -1, 4, 4]], [[2, 2, 2, 2], [1, 0, -3, 6]]];
  const [gamma, beta] = [[1, 2, 0.5, 1], [0, 1, 0, -1]];
  /** The definition: per example and group, over its positions and channels. */
  const expected = (xs: number[][][], eps: number) =>
    xs.flatMap((example) => {
      const out = example.map((row) => [...row]);
      for (const group of [[0, 1], [2, 3]]) {
        const members = example.flatMap((row) => group.map((c) => row[c]!));
        const m = members.reduce((a, b) => a + b) / members.length;
        const v = members.reduce((a, b) => a + (b - m) ** 2, 0) / members.length;
        example.forEach((row, r) => group.forEach((c) => (out[r]![c] = ((row[c]! - m) / Math.sqrt(v + eps)) * gamma[c]! + beta[c]!)));
      }
      return out.flat();
    });
  const specs = { x: f32(["N", 2, 4]), gamma: f32([4]), beta: f32([4]) };
  test("values", () => {
    const p = program(specs, ({ x, gamma, beta }) => groupNorm(x, gamma, beta, 2));
    expectClose(plain(runLeaf(p, { x, gamma, beta })).data, expected(x, 1e-5));
  });
  test("its gradient matches central differences", () => {
    const weights = x.flat(2).map((_, i) => ((i * 7) % 5) - 2);
    const loss = (xs: number[][][]) => expected(xs, 1e-5).reduce((a, e, i) => a + e * weights[i]!, 0);
    const p = program({ ...specs, x: f32([2, 2, 4]) }, ({ x, gamma, beta }) =>
      grad((v: typeof x) => sum(mul(groupNorm(v, gamma, beta, 2), constant([[weights.slice(0, 4), weights.slice(4, 8)], [weights.slice(8, 12), weights.slice(12)]]))))(x),
    );
    const h = 1e-6;
    const numeric = x.flat(2).map((_, j) => {
      const moved = (by: number) => loss(x.map((ex, e) => ex.map((row, r) => row.map((v, c) => (e * 8 + r * 4 + c === j ? v + by : v)))));
      return (moved(h) - moved(-h)) / (2 * h);
    });
    expectClose(plain(runLeaf(p, { x, gamma, beta })).data, numeric, 4);
  });
  test("groups must divide the channels", () => {
    expect(() => program(specs, ({ x, gamma, beta }) => groupNorm(x, gamma, beta, 3))).toThrow(/FT302: groupNorm\(\) groups: 3 does not divide the 4 channels/);
  });
});

test("every table has a rule for each primitive along an axis", () => {
  for (const name of Object.keys(sequencePrimitives)) {
    expect(primitives[name], name).toBeDefined();
    expect(tensorRules[name] ?? multiOutputRules[name], `interpreter ${name}`).toBeDefined();
    for (const [table, rules] of Object.entries({ batchRules, jvpRules, vjpRules, tfjsRules, onnxRules })) expect(rules[name], `${table}.${name}`).toBeDefined();
  }
});
