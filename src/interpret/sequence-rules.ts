/**
 * Evaluation rules of the primitives along one axis (src/ir/sequence-primitives.ts): each
 * works lane by lane, a lane being the entries along the axis with every other index fixed.
 */
import * as shapes from "../ir/shapes.js";
import { forEachLane } from "./reduction-rules.js";
import { attrNumber, type MultiTensorRule, type RuleContext, type TensorRule } from "./rule.js";
import { addAt, convertValue, describe, sizeOf, tensor, type Tensor } from "./tensor.js";

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
  return [sizeOf(shape.slice(0, axis)), shape[axis]!, sizeOf(shape.slice(axis + 1))];
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

/** Calls visit(lane, j, from, to) for each entry j of each lane: `from` in the indices (m per lane), `to` in x (n per lane). */
function forEachAlong(shape: readonly number[], axis: number, m: number, visit: (from: number, to: (row: number) => number) => void): void {
  const [outer, n, inner] = around(shape, axis);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < m; j++) {
      for (let k = 0; k < inner; k++) visit((o * m + j) * inner + k, (row) => (o * n + row) * inner + k);
    }
  }
}

function takeAlong([x, indices]: readonly Tensor[], cx: RuleContext): Tensor {
  const axis = axisOf(cx, x!);
  const n = x!.shape[axis]!;
  const out = tensor(indices!.shape, x!.dtype);
  forEachAlong(x!.shape, axis, indices!.shape[axis]!, (from, to) => {
    const row = indices!.data[from]!;
    if (row >= 0 && row < n) out.data[from] = x!.data[to(row)]!;
  });
  return out;
}

function takeAlongGrad([ct, indices, like]: readonly Tensor[], cx: RuleContext): Tensor {
  const axis = axisOf(cx, like!, 2);
  const n = like!.shape[axis]!;
  const out = tensor(like!.shape, like!.dtype);
  forEachAlong(like!.shape, axis, indices!.shape[axis]!, (from, to) => {
    const row = indices!.data[from]!;
    if (row >= 0 && row < n) addAt(out.data, to(row), ct!.data[from]!);
  });
  return out;
}

/** Ascending order with NaN last (numpy's); equal entries keep their order (Array.prototype.sort is stable). */
export const ascending = (a: number, b: number): number => (Number.isNaN(a) ? (Number.isNaN(b) ? 0 : 1) : Number.isNaN(b) ? -1 : a - b);

function sort([x]: readonly Tensor[], cx: RuleContext): Tensor[] {
  const axis = axisOf(cx, x!);
  const k = cx.attrs.k === null ? x!.shape[axis]! : attrNumber(cx, "k");
  const shape = x!.shape.map((d, i) => (i === axis ? k : d));
  const [values, positions] = [tensor(shape, x!.dtype), tensor(shape, "int32")];
  const sign = cx.attrs.descending === true ? -1 : 1;
  const inner = around(shape, axis)[2];
  forEachLane(x!.shape, axis, (at, lane) => {
    const order = at.map((_, j) => j).sort((a, b) => sign * ascending(x!.data[at[a]!]!, x!.data[at[b]!]!));
    const base = Math.floor(lane / inner) * k * inner + (lane % inner);
    order.slice(0, k).forEach((j, r) => {
      values.data[base + r * inner] = x!.data[at[j]!]!;
      positions.data[base + r * inner] = j;
    });
  });
  return [values, positions];
}

export const sequenceRules: Record<string, TensorRule> = { cumsum, take, take_grad: takeGrad, take_along: takeAlong, take_along_grad: takeAlongGrad };
/** Rules with several outputs. */
export const sequenceMultiRules: Record<string, MultiTensorRule> = { sort };
