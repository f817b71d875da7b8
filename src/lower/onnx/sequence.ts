/**
 * ONNX lowering of the primitives along one axis (src/ir/sequence-primitives.ts). Lookups
 * view their table as [outer, n, inner] around the axis, so that one Gather (axis 1) and one
 * ScatterND (the rows moved to the front) serve every rank.
 */
import type { Node } from "../../ir/types.js";
import { DataType } from "./proto.js";
import { inShape, normalized, outShape, reshape, shapeOf, type OnnxContext, type OnnxRule } from "./rules.js";

const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

/** The table's [outer, n, inner] around attrs.axis (input `table` of the node), and the number of indices. */
function lookupView(node: Node, cx: OnnxContext, table: number): { outer: number; n: number; inner: number; m: number } {
  const shape = inShape(node, cx, table);
  const axis = normalized(node.attrs.axis as number, shape.length);
  return { outer: product(shape.slice(0, axis)), n: shape[axis]!, inner: product(shape.slice(axis + 1)), m: product(inShape(node, cx, 1)) };
}

/** Whether each of the int32 `indices` lies in [0, n). */
function inRange(cx: OnnxContext, indices: string, n: number): string {
  const atLeastZero = cx.g.op1("GreaterOrEqual", [indices, cx.g.model.scalar("int32", 0)]);
  return cx.g.op1("And", [atLeastZero, cx.g.op1("Less", [indices, cx.g.model.scalar("int32", n)])]);
}

/** The indices flattened, and whether each lies in [0, n). */
function checkedIndices(node: Node, cx: OnnxContext, n: number): { flat: string; valid: string } {
  const flat = reshape(cx, cx.name(node.inputs[1]!), [-1]);
  return { flat, valid: inRange(cx, flat, n) };
}

/** Per-lane indices with those outside [0, n) replaced by `outside`, and whether each was inside. */
function clampedLanes(node: Node, cx: OnnxContext, n: number, outside: number): { safe: string; valid: string } {
  const indices = cx.name(node.inputs[1]!);
  const valid = inRange(cx, indices, n);
  return { valid, safe: cx.g.op1("Where", [valid, indices, cx.g.model.scalar("int32", outside)]) };
}

export const sequenceRules: Record<string, OnnxRule> = {
  cumsum: (node, cx) => {
    const axis = cx.g.model.constant("int64", [], [normalized(node.attrs.axis as number, inShape(node, cx).length)]);
    const flags = { exclusive: node.attrs.exclusive === true ? 1 : 0, reverse: node.attrs.reverse === true ? 1 : 0 };
    return [cx.g.op1("CumSum", [cx.name(node.inputs[0]!), axis], flags)];
  },
  // Gather fails on an index out of range: such rows read row 0, then become zeros.
  take: (node, cx) => {
    const { outer, n, inner, m } = lookupView(node, cx, 0);
    const { flat, valid } = checkedIndices(node, cx, n);
    const safe = cx.g.op1("Where", [valid, flat, cx.g.model.scalar("int32", 0)]);
    const rows = cx.g.op1("Gather", [reshape(cx, cx.name(node.inputs[0]!), [outer, n, inner]), safe], { axis: 1 });
    const zero = cx.g.model.scalar(cx.types[node.outputs[0]!]!.dtype, 0);
    const kept = cx.g.op1("Where", [reshape(cx, valid, [1, m, 1]), rows, zero]);
    return [reshape(cx, kept, outShape(node, cx))];
  },
  // ScatterND fails on an index out of range: such rows add into an extra row n, dropped after.
  take_grad: (node, cx) => {
    const { outer, n, inner, m } = lookupView(node, cx, 2);
    const { flat, valid } = checkedIndices(node, cx, n);
    const target = cx.g.op1("Where", [valid, flat, cx.g.model.scalar("int32", n)]);
    const positions = reshape(cx, cx.g.op1("Cast", [target], { to: DataType.INT64 }), [m, 1]);
    const updates = cx.g.op1("Transpose", [reshape(cx, cx.name(node.inputs[0]!), [outer, m, inner])], { perm: [1, 0, 2] });
    const zero = cx.g.model.scalar(cx.types[node.outputs[0]!]!.dtype, 0);
    const zeros = cx.g.op1("Expand", [zero, cx.g.model.ints([n + 1, outer, inner])]);
    const summed = cx.g.op1("ScatterND", [zeros, positions, updates], { reduction: "add" });
    const rows = cx.g.op1("Slice", [summed, cx.g.model.ints([0]), cx.g.model.ints([n]), cx.g.model.ints([0])]);
    const back = cx.g.op1("Transpose", [rows], { perm: [1, 0, 2] });
    return [reshape(cx, back, shapeOf(cx, node.outputs[0]!))];
  },
  take_along: (node, cx) => {
    const shape = inShape(node, cx);
    const axis = normalized(node.attrs.axis as number, shape.length);
    const { safe, valid } = clampedLanes(node, cx, shape[axis]!, 0);
    const picked = cx.g.op1("GatherElements", [cx.name(node.inputs[0]!), safe], { axis });
    return [cx.g.op1("Where", [valid, picked, cx.g.model.scalar(cx.types[node.outputs[0]!]!.dtype, 0)])];
  },
  // Entries whose index is outside [0, n) add into an extra position n of their lane, sliced off after.
  take_along_grad: (node, cx) => {
    const shape = inShape(node, cx, 2);
    const axis = normalized(node.attrs.axis as number, shape.length);
    const n = shape[axis]!;
    const { safe } = clampedLanes(node, cx, n, n);
    const wider = shape.map((d, i) => (i === axis ? n + 1 : d));
    const zeros = cx.g.op1("Expand", [cx.g.model.scalar(cx.types[node.outputs[0]!]!.dtype, 0), cx.g.model.ints(wider)]);
    const summed = cx.g.op1("ScatterElements", [zeros, safe, cx.name(node.inputs[0]!)], { axis, reduction: "add" });
    return [cx.g.op1("Slice", [summed, cx.g.model.ints([0]), cx.g.model.ints([n]), cx.g.model.ints([axis])])];
  },
  // TopK puts the lower position first among equals, in both directions: a stable sort.
  sort: (node, cx) => {
    const shape = inShape(node, cx);
    const axis = normalized(node.attrs.axis as number, shape.length);
    const k = node.attrs.k === null ? shape[axis]! : (node.attrs.k as number);
    const attrs = { axis, largest: node.attrs.descending === true ? 1 : 0, sorted: 1 };
    const [values, indices] = cx.g.op("TopK", [cx.name(node.inputs[0]!), cx.g.model.ints([k])], attrs, 2) as [string, string];
    return [values, cx.g.op1("Cast", [indices], { to: DataType.INT32 })];
  },
};
