/**
 * Evaluation rules of the primitives that combine elements: matmul (numpy semantics),
 * reductions over axes, argmax, and softmax / log_softmax (stable: the lane's maximum is
 * subtracted before exp).
 */
import * as shapes from "../ir/shapes.js";
import { axesOf } from "./array-rules.js";
import { attrNumber, type RuleContext, type TensorRule } from "./rule.js";
import { broadcastPosition, convertValue, describe, forEachIndex, sizeOf, tensor, type Tensor } from "./tensor.js";

function matmul([a, b]: readonly Tensor[], cx: RuleContext): Tensor {
  const ctx = { op: cx.op, a: describe(a!, cx.inputTypes[0]!), b: describe(b!, cx.inputTypes[1]!) };
  const shape = shapes.matmulShape(a!.shape, b!.shape, ctx) as number[];
  // numpy: a vector on the left is a row [1,k], on the right a column [k,1]; the unit dim is dropped again.
  const left = a!.shape.length === 1 ? [1, ...a!.shape] : a!.shape;
  const right = b!.shape.length === 1 ? [...b!.shape, 1] : b!.shape;
  const [n, k] = left.slice(-2) as [number, number];
  const m = right[right.length - 1]!;
  const batch = shapes.broadcastShapes(left.slice(0, -2), right.slice(0, -2), ctx) as number[];
  const leftAt = broadcastPosition(left.slice(0, -2), batch);
  const rightAt = broadcastPosition(right.slice(0, -2), batch);
  const out = tensor(shape, a!.dtype);
  forEachIndex(batch, (index, flat) => {
    const [aBase, bBase, outBase] = [leftAt(index) * n * k, rightAt(index) * k * m, flat * n * m];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < m; j++) {
        let sum = 0;
        for (let l = 0; l < k; l++) sum += a!.data[aBase + i * k + l]! * b!.data[bBase + l * m + j]!;
        out.data[outBase + i * m + j] = convertValue(sum, a!.dtype);
      }
    }
  });
  return out;
}

/**
 * A reduction over `attrs.axes` (all when null): folds each output's elements from `start`
 * with `combine`, then `finish` gets the folded value and the number of elements folded.
 */
function reduction(start: number, combine: (acc: number, x: number) => number, finish = (acc: number, _count: number) => acc): TensorRule {
  return ([x], cx) => {
    const axes = axesOf(cx, x!);
    const kept = x!.shape.map((d, axis) => (axes.includes(axis) ? 1 : d));
    const shape = shapes.reduceShape(x!.shape, axes, cx.attrs.keepDims === true, cx.op, describe(x!, cx.inputTypes[0]!)) as number[];
    // Dropping unit dims keeps the row-major layout, so `kept` positions are output positions.
    const position = broadcastPosition(kept, x!.shape);
    const acc = new Float64Array(sizeOf(kept)).fill(start);
    forEachIndex(x!.shape, (index, flat) => {
      const at = position(index);
      acc[at] = combine(acc[at]!, x!.data[flat]!);
    });
    const count = sizeOf(axes.map((axis) => x!.shape[axis]!));
    return tensor(shape, x!.dtype, acc.map((v) => convertValue(finish(v, count), x!.dtype)));
  };
}

/** Calls visit with the flat positions of each 1-D lane of `shape` along axis, lanes in row-major order. */
export function forEachLane(shape: readonly number[], axis: number, visit: (positions: number[], lane: number) => void): void {
  const length = shape[axis]!;
  const inner = sizeOf(shape.slice(axis + 1));
  const lanes = length === 0 ? 0 : sizeOf(shape) / length;
  for (let lane = 0; lane < lanes; lane++) {
    const base = Math.floor(lane / inner) * length * inner + (lane % inner);
    visit(Array.from({ length }, (_, j) => base + j * inner), lane);
  }
}

function argmax([x]: readonly Tensor[], cx: RuleContext): Tensor {
  const text = describe(x!, cx.inputTypes[0]!);
  const axis = shapes.normalizeAxis(attrNumber(cx, "axis"), x!.shape.length, cx.op, text);
  const out = tensor(shapes.reduceShape(x!.shape, [axis], false, cx.op, text) as number[], "int32");
  forEachLane(x!.shape, axis, (positions, lane) => {
    // The first maximum; a NaN counts as the maximum, as in numpy.
    let best = 0;
    for (let j = 1; j < positions.length; j++) {
      const current = x!.data[positions[best]!]!;
      if (Number.isNaN(current)) break;
      const v = x!.data[positions[j]!]!;
      if (Number.isNaN(v) || v > current) best = j;
    }
    out.data[lane] = best;
  });
  return out;
}

/** softmax or log_softmax along `attrs.axis`, from each lane's values, max and sum of exp(x - max). */
function softmaxLike(value: (x: number, max: number, sumExp: number) => number): TensorRule {
  return ([x], cx) => {
    const axis = shapes.normalizeAxis(attrNumber(cx, "axis"), x!.shape.length, cx.op, describe(x!, cx.inputTypes[0]!));
    const out = tensor(x!.shape, x!.dtype);
    forEachLane(x!.shape, axis, (positions) => {
      const max = positions.reduce((m, p) => Math.max(m, x!.data[p]!), -Infinity);
      const sumExp = positions.reduce((s, p) => s + Math.exp(x!.data[p]! - max), 0);
      for (const p of positions) out.data[p] = value(x!.data[p]!, max, sumExp);
    });
    return out;
  };
}

export const reductionRules: Record<string, TensorRule> = {
  matmul,
  reduce_sum: reduction(0, (acc, x) => acc + x),
  reduce_mean: reduction(0, (acc, x) => acc + x, (sum, count) => sum / count),
  // Math.max and Math.min propagate NaN, as numpy's max/min do.
  reduce_max: reduction(-Infinity, Math.max),
  reduce_min: reduction(Infinity, Math.min),
  argmax,
  softmax: softmaxLike((x, max, sumExp) => Math.exp(x - max) / sumExp),
  log_softmax: softmaxLike((x, max, sumExp) => x - max - Math.log(sumExp)),
};
