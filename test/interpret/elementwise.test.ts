/** The reference interpreter's elementwise primitives, each against hand-computed values. */
import { describe, expect, test } from "vitest";
import {
  abs,
  add,
  atClients,
  atServer,
  bool,
  broadcast,
  cast,
  clip,
  div,
  equal,
  exp,
  f32,
  greater,
  greaterEqual,
  i32,
  less,
  lessEqual,
  log,
  logicalAnd,
  logicalNot,
  logicalOr,
  map,
  maximum,
  minimum,
  mul,
  neg,
  notEqual,
  pow,
  program,
  relu,
  sigmoid,
  sign,
  sqrt,
  stopGradient,
  sub,
  tanh,
  sin,
  cos,
  where,
} from "../../src/index.js";
import { expectClose, plain, run, runRecord } from "./helpers.js";

describe("unary", () => {
  const p = program({ x: f32([4]), positive: f32([3]) }, ({ x, positive }) => ({
    neg: neg(x),
    abs: abs(x),
    sign: sign(x),
    relu: relu(x),
    sigmoid: sigmoid(x),
    tanh: tanh(x),
    sin: sin(x),
    cos: cos(x),
    stopGradient: stopGradient(x),
    exp: exp(positive),
    log: log(positive),
    sqrt: sqrt(positive),
  }));
  const out = runRecord(p, { x: [-2, -0.5, 0, 1.5], positive: [0.25, 1, 4] });

  test.each([
    ["neg", [2, 0.5, 0, -1.5]],
    ["abs", [2, 0.5, 0, 1.5]],
    ["sign", [-1, -1, 0, 1]],
    ["relu", [0, 0, 0, 1.5]],
    ["sigmoid", [0.11920292202211755, 0.3775406687981454, 0.5, 0.8175744761936437]],
    ["tanh", [-0.9640275800758169, -0.46211715726000974, 0, 0.9051482536448664]],
    ["sin", [-0.9092974268256817, -0.479425538604203, 0.0, 0.9974949866040544]],
    ["cos", [-0.4161468365471424, 0.8775825618903728, 1.0, 0.0707372016677029]],
    ["stopGradient", [-2, -0.5, 0, 1.5]],
    ["exp", [1.2840254166877414, Math.E, 54.598150033144236]],
    ["log", [-1.3862943611198906, 0, 1.3862943611198906]],
    ["sqrt", [0.5, 1, 2]],
  ])("%s", (name, expected) => expectClose(plain(out[name]).data, expected, 12));

  test("sign(0) is +0 and sign keeps int32", () => {
    const q = program({ k: i32([3]) }, ({ k }) => ({ sign: sign(k), neg: neg(k) }));
    const ints = runRecord(q, { k: [-5, 0, 3] });
    expect(plain(ints.sign).data).toEqual([-1, 0, 1]);
    expect(Object.is(plain(ints.sign).data[1], 0)).toBe(true);
    expect(ints.sign).toMatchObject({ dtype: "int32" });
  });
});

describe("binary, broadcasting [2,1] with [3]", () => {
  const p = program({ a: f32([2, 1]), b: f32([3]) }, ({ a, b }) => ({
    add: add(a, b),
    sub: sub(a, b),
    mul: mul(a, b),
    div: div(a, b),
    pow: pow(a, b),
    maximum: maximum(a, b),
    minimum: minimum(a, b),
    less: less(a, b),
    lessEqual: lessEqual(a, b),
    greater: greater(a, b),
    greaterEqual: greaterEqual(a, b),
    equal: equal(a, b),
    notEqual: notEqual(a, b),
  }));
  const out = runRecord(p, { a: [[1], [4]], b: [1, 2, 4] });

  test.each([
    ["add", [2, 3, 5, 5, 6, 8]],
    ["sub", [0, -1, -3, 3, 2, 0]],
    ["mul", [1, 2, 4, 4, 8, 16]],
    ["div", [1, 0.5, 0.25, 4, 2, 1]],
    ["pow", [1, 1, 1, 4, 16, 256]],
    ["maximum", [1, 2, 4, 4, 4, 4]],
    ["minimum", [1, 1, 1, 1, 2, 4]],
    ["less", [0, 1, 1, 0, 0, 0]],
    ["lessEqual", [1, 1, 1, 0, 0, 1]],
    ["greater", [0, 0, 0, 1, 1, 0]],
    ["greaterEqual", [1, 0, 0, 1, 1, 1]],
    ["equal", [1, 0, 0, 0, 0, 1]],
    ["notEqual", [0, 1, 1, 1, 1, 0]],
  ])("%s", (name, expected) => expect(plain(out[name])).toEqual({ shape: [2, 3], data: expected }));

  test("comparisons give bool", () => {
    expect(out.less).toMatchObject({ dtype: "bool" });
    expect(out.add).toMatchObject({ dtype: "float32" });
  });

  test("NaN is data: it propagates through arithmetic and maximum", () => {
    const q = program({ a: f32([2]) }, ({ a }) => ({ sum: add(a, 1), max: maximum(a, 0), less: less(a, 0) }));
    const nan = runRecord(q, { a: [Number.NaN, -1] });
    expect(plain(nan.sum).data).toEqual([Number.NaN, 0]);
    expect(plain(nan.max).data).toEqual([Number.NaN, 0]);
    expect(plain(nan.less).data).toEqual([0, 1]);
  });

  test("int32 arithmetic stays integral and wraps at 32 bits", () => {
    const q = program({ k: i32([3]) }, ({ k }) => ({ mul: mul(k, 3), add: add(k, 2147483647) }));
    const ints = runRecord(q, { k: [-7, 2, 1] });
    expect(plain(ints.mul).data).toEqual([-21, 6, 3]);
    expect(plain(ints.add).data).toEqual([2147483640, -2147483647, -2147483648]);
  });
});

describe("logical, where, cast, clip", () => {
  test("logicalAnd, logicalOr, logicalNot", () => {
    const p = program({ p: bool([4]), q: bool([4]) }, ({ p, q }) => ({ and: logicalAnd(p, q), or: logicalOr(p, q), not: logicalNot(p) }));
    const out = runRecord(p, { p: [1, 1, 0, 0], q: [1, 0, 1, 0] });
    expect(plain(out.and).data).toEqual([1, 0, 0, 0]);
    expect(plain(out.or).data).toEqual([1, 1, 1, 0]);
    expect(plain(out.not).data).toEqual([0, 0, 1, 1]);
  });

  test("where broadcasts condition and branches", () => {
    const p = program({ c: bool([2, 1]), a: f32([3]), b: f32([]) }, ({ c, a, b }) => where(c, a, b));
    expect(plain(run(p, { c: [[1], [0]], a: [1, 2, 3], b: -1 }))).toEqual({ shape: [2, 3], data: [1, 2, 3, -1, -1, -1] });
  });

  test("cast truncates toward zero to int32, tests x != 0 to bool, maps bool to 0/1", () => {
    const p = program({ x: f32([5]), flags: bool([2]) }, ({ x, flags }) => ({
      int: cast(x, "int32"),
      bool: cast(x, "bool"),
      float: cast(flags, "float32"),
      roundTrip: cast(cast(x, "int32"), "float32"),
    }));
    const out = runRecord(p, { x: [-1.7, -0.5, 0, 2.9, Number.NaN], flags: [1, 0] });
    expect(plain(out.int).data).toEqual([-1, 0, 0, 2, 0]);
    expect(out.int).toMatchObject({ dtype: "int32" });
    expect(plain(out.bool).data).toEqual([1, 1, 0, 1, 1]);
    expect(plain(out.float).data).toEqual([1, 0]);
    expect(plain(out.roundTrip).data).toEqual([-1, 0, 0, 2, 0]);
  });

  test("clip is maximum then minimum", () => {
    const p = program({ x: f32([4]) }, ({ x }) => clip(x, -1, 1));
    expect(plain(run(p, { x: [-3, -0.5, 0.5, 3] })).data).toEqual([-1, -0.5, 0.5, 1]);
  });

  test("elementwise ops on CLIENTS values run per client, sharing local operands", () => {
    const p = program({ s: atServer(f32([2])), x: atClients(f32([2])) }, ({ s, x }) => sub(mul(x, 2), broadcast(s)));
    expect(plain(run(p, { s: [1, 10], x: [[1, 2], [3, 4]] }))).toEqual({ shape: [2, 2], data: [1, -6, 5, -2] });
  });

  test("a map body sees one client's members", () => {
    const p = program({ x: atClients(f32([])) }, ({ x }) => map((m) => mul(m, m), x));
    expect(plain(run(p, { x: [1, -2, 3] })).data).toEqual([1, 4, 9]);
  });
});
