/** The reference interpreter's rules for log1p, floor, round and mod, and the composites of issue 24 point 4, against hand-computed values. */
import { describe, expect, test } from "vitest";
import { argmin, f32, floor, i32, jvp, log1p, mod, norm, program, round, softplus, square, squaredDistance } from "../../src/index.js";
import { FedTensorError } from "../../src/index.js";
import { expectClose, plain, runRecord } from "./helpers.js";

/** The FT code a function throws. */
function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (error) {
    return error instanceof FedTensorError ? error.code : `not an FT error: ${String(error)}`;
  }
  return undefined;
}

describe("unary primitives, float64", () => {
  const p = program({ x: f32([7]) }, ({ x }) => ({ log1p: log1p(x), floor: floor(x), round: round(x) }));
  const x = [1e-20, -0.5, 2.5, 3.5, -2.5, -1.2, Number.NaN];
  const out = runRecord(p, { x });

  test("log1p is Math.log1p: digits of tiny x kept, NaN kept", () => {
    expect(plain(out.log1p).data).toEqual(x.map(Math.log1p));
    expect(plain(out.log1p).data[0]).toBe(1e-20);
  });
  test("floor rounds down, NaN stays NaN", () => expect(plain(out.floor).data).toEqual([0, -1, 2, 3, -3, -2, Number.NaN]));
  test("round takes exact halves to the even integer", () => expect(plain(out.round).data).toEqual([0, -0, 2, 4, -2, -1, Number.NaN]));
  test("floor and round of int32 are FT205 while tracing", () => {
    expect(codeOf(() => program({ k: i32([2]) }, ({ k }) => floor(k as never)))).toBe("FT205");
    expect(codeOf(() => program({ k: i32([2]) }, ({ k }) => round(k as never)))).toBe("FT205");
  });
});

describe("mod, broadcasting [2,1] with [3]", () => {
  test("f32: the sign of the divisor; by 0 NaN; by +-infinity a itself or the infinity", () => {
    const run = runRecord(program({ a: f32([2, 1]), b: f32([3]) }, ({ a, b }) => ({ m: mod(a, b) })), { a: [[7.5], [-7.5]], b: [2, -2, 0] });
    expect(plain(run.m)).toEqual({ shape: [2, 3], data: [1.5, -0.5, Number.NaN, 0.5, -1.5, Number.NaN] });
    const inf = runRecord(program({ a: f32([2]), b: f32([2]) }, ({ a, b }) => ({ m: mod(a, b) })), { a: [3, -3], b: [Infinity, Infinity] });
    expect(plain(inf.m).data).toEqual([3, Infinity]);
  });

  test("i32: floored, a mod 0 is a, dtype kept", () => {
    const out = runRecord(program({ a: i32([2, 1]), b: i32([3]) }, ({ a, b }) => ({ m: mod(a, b) })), { a: [[7], [-7]], b: [3, -3, 0] });
    expect(plain(out.m)).toEqual({ shape: [2, 3], data: [1, -2, 7, 2, -1, -7] });
    expect(out.m).toMatchObject({ dtype: "int32" });
  });

  test("mixing dtypes is FT205", () => expect(codeOf(() => program({ a: f32([2]), b: i32([2]) }, ({ a, b }) => mod(a, b as never)))).toBe("FT205"));

  test("jvp: d/da = 1, d/db = -floor(a / b)", () => {
    const p = program({ a: f32([2]), b: f32([2]), ta: f32([2]), tb: f32([2]) }, ({ a, b, ta, tb }) => ({
      tangent: jvp((u: typeof a, v: typeof b) => mod(u, v), [a, b], [ta, tb])[1],
    }));
    // a = [7.5, -7.5], b = [2, 2]: floor(a / b) = [3, -4]; tangent = ta - tb floor(a / b).
    const out = runRecord(p, { a: [7.5, -7.5], b: [2, 2], ta: [1, 1], tb: [1, 0.5] });
    expect(plain(out.tangent).data).toEqual([1 - 3, 1 + 2]);
  });
});

describe("composites", () => {
  test("square, softplus, argmin (NaN counts as the minimum, as in numpy)", () => {
    const p = program({ x: f32([4]), k: i32([3]) }, ({ x, k }) => ({ square: square(x), softplus: softplus(x), argmin: argmin(x), ints: argmin(k) }));
    const out = runRecord(p, { x: [-3, 0, 800, -800], k: [4, -9, -9] });
    expect(plain(out.square).data).toEqual([9, 0, 640000, 640000]);
    expectClose(plain(out.softplus).data, [Math.log1p(Math.exp(-3)), Math.LN2, 800, 0], 12);
    expect(plain(out.argmin).data).toEqual([3]);
    expect(plain(out.ints).data).toEqual([1]);
    const nan = runRecord(program({ x: f32([3]) }, ({ x }) => ({ i: argmin(x) })), { x: [1, Number.NaN, -5] });
    expect(plain(nan.i).data).toEqual([1]);
  });

  test("norm's orders and axes; an unknown ord is FT305, an int32 tensor FT205", () => {
    const p = program({ x: f32([2, 2]) }, ({ x }) => ({ two: norm(x, { axis: 0 }), one: norm(x, { ord: 1 }), inf: norm(x, { ord: Infinity, axis: [1], keepDims: true }) }));
    const out = runRecord(p, { x: [[3, -1], [-4, 1]] });
    expectClose(plain(out.two).data, [5, Math.SQRT2], 12);
    expect(plain(out.one).data).toEqual([9]);
    expect(plain(out.inf)).toEqual({ shape: [2, 1], data: [3, 4] });
    expect(codeOf(() => program({ x: f32([2]) }, ({ x }) => norm(x, { ord: 3 })))).toBe("FT305");
    expect(codeOf(() => program({ k: i32([2]) }, ({ k }) => norm(k as never)))).toBe("FT205");
  });

  test("squaredDistance broadcasts like sub, then sums the axes; shapes that do not broadcast are FT201", () => {
    const p = program({ points: f32([3, 1, 2]), centers: f32([2, 2]) }, ({ points, centers }) => ({ d: squaredDistance(points, centers, -1) }));
    const out = runRecord(p, { points: [[[0, 0]], [[1, 1]], [[3, 4]]], centers: [[0, 0], [3, 3]] });
    expect(plain(out.d)).toEqual({ shape: [3, 2], data: [0, 18, 2, 8, 25, 1] });
    expect(codeOf(() => program({ a: f32([3]), b: f32([2]) }, ({ a, b }) => squaredDistance(a, b as never)))).toBe("FT201");
  });
});
