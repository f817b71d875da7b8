/** The reference interpreter's tensor primitives beyond the elementwise ones, against hand-computed values. */
import { describe, expect, test } from "vitest";
import {
  argmax,
  concat,
  expandDims,
  f32,
  i32,
  logSoftmax,
  matmul,
  max,
  mean,
  min,
  mul,
  oneHot,
  program,
  reshape,
  slice,
  softmax,
  stack,
  sum,
  transpose,
  zerosLike,
} from "../../src/index.js";
import { currentGraph, traceBody } from "../../src/front/trace.js";
import { emit, expectClose, plain, primitiveProgram, run, runRecord } from "./helpers.js";

describe("matmul (numpy semantics)", () => {
  const p = program({ m: f32([2, 2]), n: f32([2, 2]), v: f32([2]), w: f32([2]), batch: f32([2, 1, 2]) }, ({ m, n, v, w, batch }) => ({
    matrix: matmul(m, n),
    vectorMatrix: matmul(v, n),
    matrixVector: matmul(m, w),
    dot: matmul(v, w),
    batched: matmul(batch, n),
  }));
  const out = runRecord(p, { m: [[1, 2], [3, 4]], n: [[5, 6], [7, 8]], v: [1, 2], w: [5, 6], batch: [[[1, 2]], [[3, 4]]] });

  test.each([
    ["matrix", [2, 2], [19, 22, 43, 50]],
    ["vectorMatrix", [2], [19, 22]],
    ["matrixVector", [2], [17, 39]],
    ["dot", [], [17]],
    ["batched", [2, 1, 2], [19, 22, 43, 50]],
  ])("%s", (name, shape, data) => expect(plain(out[name])).toEqual({ shape, data }));

  test("int32 matmul", () => {
    const q = program({ a: i32([1, 2]), b: i32([2, 1]) }, ({ a, b }) => matmul(a, b));
    expect(run(q, { a: [[3, -2]], b: [[4], [5]] })).toMatchObject({ shape: [1, 1], dtype: "int32", data: Float64Array.of(2) });
  });
});

describe("layout", () => {
  const p = program({ x: f32([2, 3]), y: f32([2, 2, 2]), a: f32([2, 1]), b: f32([2, 2]), u: f32([2]), v: f32([2]) }, ({ x, y, a, b, u, v }) => ({
    transposed: transpose(x),
    permuted: transpose(y, [1, 2, 0]),
    reshaped: reshape(x, [3, -1]),
    expanded: expandDims(x, 1),
    concatenated: concat([a, b], 1),
    stacked: stack([u, v]),
    stackedInner: stack([u, v], 1),
    sliced: slice(x, [0, 1], [2, -1]),
    zeros: zerosLike(x),
  }));
  const out = runRecord(p, {
    x: [[1, 2, 3], [4, 5, 6]],
    y: [[[0, 1], [2, 3]], [[4, 5], [6, 7]]],
    a: [[1], [2]],
    b: [[5, 6], [7, 8]],
    u: [1, 2],
    v: [3, 4],
  });

  test.each([
    ["transposed", [3, 2], [1, 4, 2, 5, 3, 6]],
    // out[i,j,k] = y[k,i,j]
    ["permuted", [2, 2, 2], [0, 4, 1, 5, 2, 6, 3, 7]],
    ["reshaped", [3, 2], [1, 2, 3, 4, 5, 6]],
    ["expanded", [2, 1, 3], [1, 2, 3, 4, 5, 6]],
    ["concatenated", [2, 3], [1, 5, 6, 2, 7, 8]],
    ["stacked", [2, 2], [1, 2, 3, 4]],
    ["stackedInner", [2, 2], [1, 3, 2, 4]],
    ["sliced", [2, 2], [2, 3, 5, 6]],
    ["zeros", [2, 3], [0, 0, 0, 0, 0, 0]],
  ])("%s", (name, shape, data) => expect(plain(out[name])).toEqual({ shape, data }));

  test("a reshape to a name no input binds binds it from the data", () => {
    const q = program({ x: f32([null]) }, ({ x }) => reshape(x, ["K", 2]));
    expect(plain(run(q, { x: [1, 2, 3, 4, 5, 6] }))).toEqual({ shape: [3, 2], data: [1, 2, 3, 4, 5, 6] });
  });

  test("oneHot gives a zero row for an index out of range", () => {
    const q = program({ k: i32([4]) }, ({ k }) => oneHot(k, 3));
    expect(plain(run(q, { k: [0, 2, 5, -1] }))).toEqual({ shape: [4, 3], data: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0] });
  });
});

describe("reductions, argmax, softmax", () => {
  const p = program({ x: f32([2, 3]) }, ({ x }) => ({
    sumAll: sum(x),
    sum0: sum(x, 0),
    sumKeep: sum(x, -1, true),
    mean1: mean(x, 1),
    meanAll: mean(x),
    max0: max(x, 0),
    min1: min(x, [1]),
    argmaxLast: argmax(x),
    argmax0: argmax(x, 0),
  }));
  const out = runRecord(p, { x: [[1, 5, 3], [4, 2, 6]] });

  test.each([
    ["sumAll", [], [21]],
    ["sum0", [3], [5, 7, 9]],
    ["sumKeep", [2, 1], [9, 12]],
    ["mean1", [2], [3, 4]],
    ["meanAll", [], [3.5]],
    ["max0", [3], [4, 5, 6]],
    ["min1", [2], [1, 2]],
    ["argmaxLast", [2], [1, 2]],
    ["argmax0", [3], [1, 0, 1]],
  ])("%s", (name, shape, data) => expect(plain(out[name])).toEqual({ shape, data }));

  test("argmax picks the first maximum", () => {
    const q = program({ x: f32([4]) }, ({ x }) => argmax(x));
    expect(run(q, { x: [3, 1, 3, 2] })).toMatchObject({ shape: [], dtype: "int32", data: Float64Array.of(0) });
  });

  test("softmax and logSoftmax, stable for large logits", () => {
    const q = program({ x: f32([3]), big: f32([3]), m: f32([2, 2]) }, ({ x, big, m }) => ({
      softmax: softmax(x),
      big: softmax(big),
      logSoftmax: logSoftmax(x),
      columns: softmax(m, 0),
    }));
    const soft = runRecord(q, { x: [1, 2, 3], big: [1000, 1001, 1002], m: [[0, 1], [0, -1]] });
    const expected = [0.09003057317038046, 0.24472847105479767, 0.6652409557748219];
    expectClose(plain(soft.softmax).data, expected, 14);
    expectClose(plain(soft.big).data, expected, 14);
    expectClose(plain(soft.logSoftmax).data, [-2.4076059644443806, -1.4076059644443806, -0.4076059644443805], 14);
    expectClose(plain(soft.columns).data, [0.5, 0.8807970779778823, 0.5, 0.11920292202211755], 14);
  });
});

describe("primitives emitted by transformations", () => {
  test("constant: a nested array, and a number filling its shape", () => {
    const nested = primitiveProgram("constant", {}, { value: [[1, 2], [3, 4]], dtype: "float32", shape: [2, 2] });
    expect(plain(run(nested, {}))).toEqual({ shape: [2, 2], data: [1, 2, 3, 4] });
    const filled = primitiveProgram("constant", {}, { value: 2.5, dtype: "int32", shape: [3] });
    expect(run(filled, {})).toMatchObject({ shape: [3], dtype: "int32", data: Float64Array.of(2, 2, 2) });
  });

  test("fill resolves named dims; iota counts", () => {
    const p = program({ x: f32(["B"]) }, () => ({
      filled: emit("fill", [], { shape: ["B", 2], value: 3, dtype: "float32" }),
      iota: emit("iota", [], { length: 4 }),
    }));
    const out = runRecord(p, { x: [0, 0, 0] });
    expect(plain(out.filled)).toEqual({ shape: [3, 2], data: [3, 3, 3, 3, 3, 3] });
    expect(plain(out.iota)).toEqual({ shape: [4], data: [0, 1, 2, 3] });
  });

  test("dim_size counts the elements over axes", () => {
    const p = program({ x: f32([2, 3, 4]) }, ({ x }) => ({ some: emit("dim_size", [x], { axes: [0, -1] }), all: emit("dim_size", [x], { axes: null }) }));
    const out = runRecord(p, { x: { shape: [2, 3, 4], data: new Float64Array(24) } });
    expect(plain(out.some)).toEqual({ shape: [], data: [8] });
    expect(plain(out.all)).toEqual({ shape: [], data: [24] });
  });

  test("broadcast_like, with axes restoring the dims a reduction dropped", () => {
    const p = program({ row: f32([3]), col: f32([2]), like: f32([2, 3]) }, ({ row, col, like }) => ({
      rows: emit("broadcast_like", [row, like]),
      cols: emit("broadcast_like", [col, like], { axes: [1] }),
    }));
    const out = runRecord(p, { row: [1, 2, 3], col: [7, 8], like: [[0, 0, 0], [0, 0, 0]] });
    expect(plain(out.rows)).toEqual({ shape: [2, 3], data: [1, 2, 3, 1, 2, 3] });
    expect(plain(out.cols)).toEqual({ shape: [2, 3], data: [7, 7, 7, 8, 8, 8] });
  });

  test("unbroadcast sums down to like's shape, or over axes", () => {
    const p = program({ x: f32([2, 3]), row: f32([3]), column: f32([2, 1]), flat: f32([2]) }, ({ x, row, column, flat }) => ({
      row: emit("unbroadcast", [x, row]),
      column: emit("unbroadcast", [x, column]),
      flat: emit("unbroadcast", [x, flat], { axes: [-1] }),
    }));
    const out = runRecord(p, { x: [[1, 2, 3], [4, 5, 6]], row: [0, 0, 0], column: [[0], [0]], flat: [0, 0] });
    expect(plain(out.row)).toEqual({ shape: [3], data: [5, 7, 9] });
    expect(plain(out.column)).toEqual({ shape: [2, 1], data: [6, 15] });
    expect(plain(out.flat)).toEqual({ shape: [2], data: [6, 15] });
  });

  test("reshape_like, pad, broadcast_to", () => {
    const p = program({ x: f32([2, 2]), like: f32([4]), r: f32([1, 2]) }, ({ x, like, r }) => ({
      reshaped: emit("reshape_like", [x, like]),
      padded: emit("pad", [x], { before: [1, 0], after: [0, 2] }),
      broadcast: emit("broadcast_to", [r], { shape: [3, 2] }),
    }));
    const out = runRecord(p, { x: [[1, 2], [3, 4]], like: [0, 0, 0, 0], r: [[5, 6]] });
    expect(plain(out.reshaped)).toEqual({ shape: [4], data: [1, 2, 3, 4] });
    expect(plain(out.padded)).toEqual({ shape: [3, 4], data: [0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0] });
    expect(plain(out.broadcast)).toEqual({ shape: [3, 2], data: [5, 6, 5, 6, 5, 6] });
  });

  test("client_loop runs its body per row of the batched operands", () => {
    const p = program({ x: f32([3, 2]), scale: f32([]) }, ({ x, scale }) => {
      const member = { dtype: "float32", placement: "member" } as const;
      const body = traceBody("client_loop", [{ ...member, shape: [2] }, { ...member, shape: [] }], ([row, s]) => [mul(row as never, s as never) as never]);
      return currentGraph("client_loop").emit("client_loop", [x, scale] as never, { clients: 3, batched: [true, false] }, "client_loop", [body])[0] as never;
    });
    expect(plain(run(p, { x: [[1, 2], [3, 4], [5, 6]], scale: 2 }))).toEqual({ shape: [3, 2], data: [2, 4, 6, 8, 10, 12] });
  });
});
