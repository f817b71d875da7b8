/**
 * Evaluation rules of the primitives that create tensors or move their elements: constants,
 * transpose, reshapes, broadcasting and its transpose, concat, slice, pad and one_hot.
 * Shapes known only at run time are checked here with the codes and texts of ir/shapes.ts.
 */
import { ftError } from "../errors/error.js";
import { printShape } from "../ir/print.js";
import * as shapes from "../ir/shapes.js";
import type { DType, DimValue, ValueType } from "../ir/types.js";
import { attrNumber, attrNumbers, type RuleContext, type TensorRule } from "./rule.js";
import {
  addAt,
  broadcastPosition,
  broadcastTo,
  convertValue,
  describe,
  forEachIndex,
  fromNested,
  requireBroadcastable,
  scalar,
  sizeOf,
  stridesOf,
  tensor,
  type Shape,
  type Tensor,
} from "./tensor.js";

const filled = (shape: Shape, dtype: DType, value: number): Tensor =>
  tensor(shape, dtype, new Float64Array(sizeOf(shape)).fill(convertValue(value, dtype)));

function constant(cx: RuleContext): Tensor {
  const shape = attrNumbers(cx, "shape");
  const dtype = cx.attrs.dtype as DType;
  if (typeof cx.attrs.value === "number") return filled(shape, dtype, cx.attrs.value);
  const nested = fromNested(cx.attrs.value);
  if (nested === undefined || nested.entries.length !== sizeOf(shape)) {
    throw new Error(`internal: constant value does not fill shape ${printShape(shape)}`);
  }
  return tensor(shape, dtype, Float64Array.from(nested.entries as number[], (v) => convertValue(v, dtype)));
}

/** The axes of `attrs.axes` as 0..rank-1 (every axis when null). */
export function axesOf(cx: RuleContext, x: Tensor, type: ValueType = cx.inputTypes[0]!): number[] {
  const axes = cx.attrs.axes;
  if (axes === null || axes === undefined) return x.shape.map((_, axis) => axis);
  return shapes.normalizeAxes(axes as number[], x.shape.length, cx.op, describe(x, type));
}

function transpose([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const perm = cx.attrs.perm === null ? x!.shape.map((_, axis) => x!.shape.length - 1 - axis) : attrNumbers(cx, "perm");
  const shape = shapes.transposeShape(x!.shape, perm, cx.op, describe(x!, cx.inputTypes[0]!)) as number[];
  const axes = shapes.normalizeAxes(perm, shape.length, cx.op, describe(x!, cx.inputTypes[0]!));
  const strides = stridesOf(x!.shape);
  const out = tensor(shape, x!.dtype);
  forEachIndex(shape, (index, flat) => {
    out.data[flat] = x!.data[index.reduce((at, i, axis) => at + i * strides[axes[axis]!]!, 0)]!;
  });
  return out;
}

/** x with the same elements and a new shape, or FT203 when the element counts differ. */
function reshaped(x: Tensor, shape: Shape, cx: RuleContext, target: readonly DimValue[] = shape): Tensor {
  const whole = shape.filter((d) => Number.isInteger(d) && d >= 0);
  if (whole.length < shape.length || sizeOf(shape) !== x.data.length) {
    const nb = `${sizeOf(whole)}${whole.length < shape.length ? "*?" : ""}`;
    throw ftError("FT203", { a: describe(x, cx.inputTypes[0]!), b: printShape(target), na: x.data.length, nb });
  }
  return tensor(shape, x.dtype, x.data);
}

/**
 * reshape's target: names take their bound sizes; -1, or a name no value has bound yet (its
 * size is then bound from the result), takes the rest of the elements.
 */
function reshape([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const target = cx.attrs.shape as DimValue[];
  const sizes = target.map((d) => (typeof d === "string" ? (cx.dims.get(d) ?? -1) : (d ?? -1)));
  const holes = sizes.filter((d) => d === -1).length;
  const known = sizeOf(sizes.filter((d) => d !== -1));
  const rest = holes === 1 && known > 0 ? x!.data.length / known : -1;
  return reshaped(x!, holes === 0 ? sizes : sizes.map((d) => (d === -1 ? rest : d)), cx, target);
}

/**
 * `shape` with unit dims inserted at attrs.axes (axes of `full`, of the given type) when given
 * and missing: the axes a reduction without keepDims dropped, which broadcast_like restores
 * and unbroadcast sums over.
 */
function withUnitAxes(shape: Shape, full: Tensor, fullType: ValueType, cx: RuleContext): Shape {
  if (cx.attrs.axes === undefined || shape.length === full.shape.length) return shape;
  const axes = new Set(axesOf(cx, full, fullType));
  let next = 0;
  return full.shape.map((_, axis) => (axes.has(axis) ? 1 : shape[next++]!));
}

function broadcastLike([x, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const source = reshaped(x!, withUnitAxes(x!.shape, like!, cx.inputTypes[1]!, cx), cx);
  requireBroadcastable(cx.op, source, cx.inputTypes[0]!, like!.shape, cx.inputTypes[1]!);
  return broadcastTo(source, like!.shape);
}

/** x summed down to the shape of like: over the axes that broadcasting like to x adds or stretches. */
function unbroadcast([x, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const target = withUnitAxes(like!.shape, x!, cx.inputTypes[0]!, cx);
  requireBroadcastable(cx.op, tensor(target, like!.dtype), cx.inputTypes[1]!, x!.shape, cx.inputTypes[0]!);
  const position = broadcastPosition(target, x!.shape);
  const out = tensor(target, x!.dtype);
  forEachIndex(x!.shape, (index, flat) => addAt(out.data, position(index), x!.data[flat]!));
  return reshaped(out, like!.shape, cx);
}

function concat(inputs: readonly Tensor[], cx: RuleContext): Tensor {
  const first = inputs[0]!;
  const shape = shapes.concatShape(inputs.map((x) => x.shape), attrNumber(cx, "axis"), cx.op, describe(first, cx.inputTypes[0]!)) as number[];
  const axis = shapes.normalizeAxis(attrNumber(cx, "axis"), shape.length, cx.op, describe(first, cx.inputTypes[0]!));
  const outer = sizeOf(shape.slice(0, axis));
  const out = tensor(shape, first.dtype);
  let at = 0;
  for (let o = 0; o < outer; o++) {
    for (const x of inputs) {
      const block = x.data.length / outer;
      out.data.set(x.data.subarray(o * block, (o + 1) * block), at);
      at += block;
    }
  }
  return out;
}

function slice([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const begin = attrNumbers(cx, "begin");
  const shape = shapes.sliceShape(x!.shape, begin, attrNumbers(cx, "size"), cx.op, describe(x!, cx.inputTypes[0]!)) as number[];
  const strides = stridesOf(x!.shape);
  const out = tensor(shape, x!.dtype);
  forEachIndex(shape, (index, flat) => {
    out.data[flat] = x!.data[index.reduce((at, i, axis) => at + (i + begin[axis]!) * strides[axis]!, 0)]!;
  });
  return out;
}

function pad([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const before = attrNumbers(cx, "before");
  const after = attrNumbers(cx, "after");
  const shape = x!.shape.map((d, axis) => d + before[axis]! + after[axis]!);
  const strides = stridesOf(shape);
  const out = tensor(shape, x!.dtype);
  forEachIndex(x!.shape, (index, flat) => {
    out.data[index.reduce((at, i, axis) => at + (i + before[axis]!) * strides[axis]!, 0)] = x!.data[flat]!;
  });
  return out;
}

function oneHot([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const depth = attrNumber(cx, "depth");
  const out = tensor([...x!.shape, depth], "float32");
  x!.data.forEach((index, i) => {
    if (index >= 0 && index < depth) out.data[i * depth + index] = 1;
  });
  return out;
}

export const arrayRules: Record<string, TensorRule> = {
  constant: (_, cx) => constant(cx),
  fill: (_, cx) => {
    const shape = (cx.attrs.shape as DimValue[]).map((d) => cx.dims.resolve(d, "fill() shape"));
    return filled(shape, cx.attrs.dtype as DType, attrNumber(cx, "value"));
  },
  iota: (_, cx) => {
    const length = cx.dims.resolve(cx.attrs.length as DimValue, "iota() length");
    return tensor([length], "int32", Float64Array.from({ length }, (_, i) => i));
  },
  dim_size: ([x], cx) => scalar(sizeOf(axesOf(cx, x!).map((axis) => x!.shape[axis]!)), "float32"),
  client_count: (_, cx) => scalar(cx.clients(), "float32"),
  transpose,
  reshape,
  broadcast_to: ([x], cx) => {
    const target = attrNumbers(cx, "shape");
    const ctx = { op: cx.op, a: describe(x!, cx.inputTypes[0]!), b: printShape(target) };
    return broadcastTo(x!, shapes.broadcastShapes(x!.shape, target, ctx) as number[]);
  },
  broadcast_like: broadcastLike,
  unbroadcast,
  expand_dims: ([x], cx) =>
    reshaped(x!, shapes.expandDimsShape(x!.shape, attrNumber(cx, "axis"), cx.op, describe(x!, cx.inputTypes[0]!)) as number[], cx),
  reshape_like: ([x, like], cx) => reshaped(x!, like!.shape, cx),
  concat,
  slice,
  pad,
  one_hot: oneHot,
};
