/**
 * Evaluation rules of the primitives along one axis (src/ir/sequence-primitives.ts): each
 * works lane by lane, a lane being the entries along the axis with every other index fixed.
 */
import * as shapes from "../ir/shapes.js";
import { forEachLane } from "./reduction-rules.js";
import { attrNumber, type RuleContext, type TensorRule } from "./rule.js";
import { convertValue, describe, tensor, type Tensor } from "./tensor.js";

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

export const sequenceRules: Record<string, TensorRule> = { cumsum };
