/**
 * Evaluation rules of the primitives along one axis (src/ir/sequence-primitives.ts): each
 * works lane by lane, a lane being the entries along the axis with every other index fixed.
 */
import * as shapes from "../ir/shapes.js";
import { forEachLane } from "./reduction-rules.js";
import { attrNumber, type RuleContext, type TensorRule } from "./rule.js";
import { addAt, convertValue, describe, tensor, type Tensor } from "./tensor.js";

/** The axis of attrs.axis as 0..rank-1. */
const axisOf = (cx: RuleContext, x: Tensor, i = 0): number =>
  shapes.normalizeAxis(attrNumber(cx, "axis"), x.shape.length, cx.op, describe(x, cx.inputTypes[i]!));

function cumsum([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const out = tensor(x!.shape, x!.dtype);
  forEachLane(x!.shape, axisOf(cx, x!), (positions) => {
    const order = cx.attrs.reverse === true ? positions.reverse() : positions;
    let total = 0;
    for (const p of order) {
      if (cx.attrs.exclusive === true) out.data[p] = convertValue(total, x!.dtype);
      total += x!.data[p]!;
      if (cx.attrs.exclusive !== true) out.data[p] = convertValue(total, x!.dtype);
    }
  });
  return out;
}

/** x as [outer, n, inner] around the axis: the sizes of the three blocks. */
function around(shape: readonly number[], axis: number): [number, number, number] {
  const size = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);
  return [size(shape.slice(0, axis)), shape[axis]!, size(shape.slice(axis + 1))];
}

function take([x, indices]: readonly Tensor[], cx: RuleContext): Tensor {
  const axis = axisOf(cx, x!);
  const [outer, n, inner] = around(x!.shape, axis);
  const m = indices!.data.length;
  const out = tensor([...x!.shape.slice(0, axis), ...indices!.shape, ...x!.shape.slice(axis + 1)], x!.dtype);
  for (let o = 0; o < outer; o++) {
    indices!.data.forEach((row, j) => {
      if (row < 0 || row >= n) return;
      for (let k = 0; k < inner; k++) out.data[(o * m + j) * inner + k] = x!.data[(o * n + row) * inner + k]!;
    });
  }
  return out;
}

function takeGrad([ct, indices, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const axis = axisOf(cx, like!, 2);
  const [outer, n, inner] = around(like!.shape, axis);
  const m = indices!.data.length;
  const out = tensor(like!.shape, like!.dtype);
  for (let o = 0; o < outer; o++) {
    indices!.data.forEach((row, j) => {
      if (row < 0 || row >= n) return;
      for (let k = 0; k < inner; k++) addAt(out.data, (o * n + row) * inner + k, ct!.data[(o * m + j) * inner + k]!);
    });
  }
  return out;
}

export const sequenceRules: Record<string, TensorRule> = { cumsum, take, take_grad: takeGrad };
