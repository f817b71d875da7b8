/**
 * Evaluation rules of the elementwise primitives: numpy broadcasting from the right, float64
 * arithmetic, comparisons and logical operations giving bool (0/1).
 */
import type { DType } from "../ir/types.js";
import * as shapes from "../ir/shapes.js";
import { printType } from "../ir/print.js";
import type { RuleContext, TensorRule } from "./rule.js";
import { broadcastPosition, convertValue, describe, forEachIndex, tensor, toDType, type Tensor } from "./tensor.js";

/** f applied elementwise to operands broadcast together, as the typing rule joins them (left to right). */
export function zipBroadcast(inputs: readonly Tensor[], cx: RuleContext, dtype: DType, f: (...values: number[]) => number): Tensor {
  let shape: readonly number[] = inputs[0]!.shape;
  inputs.slice(1).forEach((x, i) => {
    const ctx = { op: cx.op, a: printType({ ...cx.inputTypes[i]!, shape }), b: describe(x, cx.inputTypes[i + 1]!) };
    shape = shapes.broadcastShapes(shape, x.shape, ctx) as number[];
  });
  const positions = inputs.map((x) => broadcastPosition(x.shape, shape));
  const out = tensor(shape, dtype);
  forEachIndex(shape, (index, flat) => {
    out.data[flat] = convertValue(f(...inputs.map((x, k) => x.data[positions[k]!(index)]!)), dtype);
  });
  return out;
}

const unary =
  (f: (x: number) => number): TensorRule =>
  ([x]) =>
    tensor(x!.shape, x!.dtype, x!.data.map((v) => convertValue(f(v), x!.dtype)));

/** A binary operation keeping the operands' dtype. */
const arithmetic =
  (f: (a: number, b: number) => number): TensorRule =>
  (inputs, cx) =>
    zipBroadcast(inputs, cx, inputs[0]!.dtype, f);

/** A binary operation giving bool. */
const predicate =
  (f: (a: number, b: number) => boolean): TensorRule =>
  (inputs, cx) =>
    zipBroadcast(inputs, cx, "bool", (a, b) => (f(a, b) ? 1 : 0));

/** The nearest integer, ties to the even one (IEEE roundTiesToEven: numpy, JAX, TensorFlow and ONNX round so). */
function roundHalfToEven(x: number): number {
  const down = Math.floor(x);
  const diff = x - down;
  if (diff !== 0.5) return Math.round(x);
  const even = down % 2 === 0 ? down : down + 1;
  // -0.5 rounds to -0, as numpy's round does (x * 0 keeps x's sign).
  return even === 0 ? x * 0 : even;
}

/**
 * a mod b with the sign of b (floored, as Python's %, numpy's and JAX's mod): the remainder
 * of truncated division, plus b where it is non-zero and of the other sign.
 */
function floatMod(a: number, b: number): number {
  const rem = a % b;
  return rem !== 0 && rem < 0 !== b < 0 ? rem + b : rem;
}

/** int32 mod: as floatMod, and a mod 0 is a (XLA's remainder by zero, so JAX's jnp.mod). */
const intMod = (a: number, b: number): number => (b === 0 ? a : floatMod(a, b));

const truthy = (x: number): boolean => x !== 0;

export const elementwiseRules: Record<string, TensorRule> = {
  neg: unary((x) => -x),
  abs: unary(Math.abs),
  // Math.sign(-0) is -0; sign(0) is 0 either way, so normalise to +0.
  sign: unary((x) => (x === 0 ? 0 : Math.sign(x))),
  relu: unary((x) => (x > 0 || Number.isNaN(x) ? x : 0)),
  exp: unary(Math.exp),
  log: unary(Math.log),
  sqrt: unary(Math.sqrt),
  sigmoid: unary((x) => 1 / (1 + Math.exp(-x))),
  tanh: unary(Math.tanh),
  sin: unary(Math.sin),
  cos: unary(Math.cos),
  log1p: unary(Math.log1p),
  floor: unary(Math.floor),
  round: unary(roundHalfToEven),
  logical_not: unary((x) => (truthy(x) ? 0 : 1)),
  stop_gradient: ([x]) => x!,
  cast: ([x], cx) => toDType(x!, cx.attrs.dtype as DType),

  add: arithmetic((a, b) => a + b),
  sub: arithmetic((a, b) => a - b),
  mul: arithmetic((a, b) => a * b),
  div: arithmetic((a, b) => a / b),
  pow: arithmetic(Math.pow),
  mod: (inputs, cx) => zipBroadcast(inputs, cx, inputs[0]!.dtype, inputs[0]!.dtype === "int32" ? intMod : floatMod),
  // Math.max and Math.min propagate NaN, as numpy's maximum/minimum and TensorFlow's do.
  maximum: arithmetic(Math.max),
  minimum: arithmetic(Math.min),

  less: predicate((a, b) => a < b),
  less_equal: predicate((a, b) => a <= b),
  greater: predicate((a, b) => a > b),
  greater_equal: predicate((a, b) => a >= b),
  equal: predicate((a, b) => a === b),
  not_equal: predicate((a, b) => a !== b),
  logical_and: predicate((a, b) => truthy(a) && truthy(b)),
  logical_or: predicate((a, b) => truthy(a) || truthy(b)),

  where: (inputs, cx) => zipBroadcast(inputs, cx, inputs[1]!.dtype, (c, a, b) => (truthy(c) ? a : b)),
};
