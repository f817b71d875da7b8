/**
 * ONNX lowering of the random-number primitives: Threefry-2x32-20 (src/ir/threefry.ts) built
 * from opset-18 integer ops on uint32, which onnxruntime's CPU kernels compute exactly: Add
 * wraps modulo 2^32, BitShift (unsigned types only) and BitwiseOr make the rotations,
 * BitwiseXor mixes. Words enter and leave as int32 through Cast, which keeps the 32 bits.
 */
import { NORMAL_FIELDS, normalFromFields, type Float32Ops } from "../../ir/normal.js";
import type { Node } from "../../ir/types.js";
import type { OnnxGraph } from "./graph.js";
import { DataType } from "./proto.js";
import { inShape, outShape, reshape, type OnnxContext, type OnnxRule } from "./rules.js";

const ROTATIONS = [
  [13, 15, 26, 6],
  [17, 29, 16, 24],
] as const;
const KS_PARITY = 0x1bd11bda;

export const u32 = (g: OnnxGraph, value: number): string => g.model.scalar("uint32", value >>> 0);
export const toU32 = (g: OnnxGraph, x: string): string => g.op1("Cast", [x], { to: DataType.UINT32 });
const toI32 = (g: OnnxGraph, x: string): string => g.op1("Cast", [x], { to: DataType.INT32 });

/** Word `index` of the last axis of a key or counter [..., 2], as uint32 [...]. */
export function word(g: OnnxGraph, x: string, index: number): string {
  return toU32(g, g.op1("Gather", [x, g.model.scalar("int64", index)], { axis: -1 }));
}

/** The 20 rounds on uint32 words (broadcast numpy-style): the output words (y0, y1). */
export function threefryRounds(g: OnnxGraph, k0: string, k1: string, x0: string, x1: string): [string, string] {
  const ks = [k0, k1, g.op1("BitwiseXor", [g.op1("BitwiseXor", [k0, k1]), u32(g, KS_PARITY)])];
  let a = g.op1("Add", [x0, ks[0]!]);
  let b = g.op1("Add", [x1, ks[1]!]);
  for (let group = 0; group < 5; group++) {
    for (const r of ROTATIONS[group % 2]!) {
      a = g.op1("Add", [a, b]);
      const left = g.op1("BitShift", [b, u32(g, r)], { direction: "LEFT" });
      const right = g.op1("BitShift", [b, u32(g, 32 - r)], { direction: "RIGHT" });
      b = g.op1("BitwiseXor", [g.op1("BitwiseOr", [left, right]), a]);
    }
    a = g.op1("Add", [a, ks[(group + 1) % 3]!]);
    b = g.op1("Add", [b, g.op1("Add", [ks[(group + 2) % 3]!, u32(g, group + 1)])]);
  }
  return [a, b];
}

/** (y0, y1) stacked on a new last axis. */
function stackWords(g: OnnxGraph, [y0, y1]: [string, string]): string {
  const last = g.model.ints([-1]);
  return g.op1("Concat", [g.op1("Unsqueeze", [y0, last]), g.op1("Unsqueeze", [y1, last])], { axis: -1 });
}

/**
 * randomBits of src/ir/threefry.ts: `perKey` words of each key, from the keys' words k0, k1
 * (uint32 [...keys, 1]), as uint32 [...keys, perKey].
 */
export function randomWords(g: OnnxGraph, k0: string, k1: string, keys: readonly number[], perKey: number): string {
  const blocks = Math.ceil(perKey / 2);
  const counters = g.model.constant("uint32", [blocks], Array.from({ length: blocks }, (_, i) => i));
  const pairs = stackWords(g, threefryRounds(g, k0, k1, counters, u32(g, 0)));
  // The rounds broadcast [...keys, 1] against the counters [blocks]: pairs is [...keys, blocks, 2].
  const flat = g.op1("Reshape", [pairs, g.model.ints([...keys, 2 * blocks])]);
  return 2 * blocks === perKey ? flat : g.op1("Slice", [flat, g.model.ints([0]), g.model.ints([perKey]), g.model.ints([keys.length])]);
}

/** Bits `shift` up of uint32 words, as float32: exact for the at most 24 bits a field has. */
function bitField(g: OnnxGraph, words: string, shift: number, bits: number): string {
  const shifted = shift === 0 ? words : g.op1("BitShift", [words, u32(g, shift)], { direction: "RIGHT" });
  const masked = shift + bits === 32 ? shifted : g.op1("BitwiseAnd", [shifted, u32(g, 2 ** bits - 1)]);
  return g.op1("Cast", [masked], { to: DataType.FLOAT });
}

/** The top 23 bits of the node's int32 words, as float32 (exact). */
function mantissaOf(cx: OnnxContext, node: Node): string {
  return bitField(cx.g, toU32(cx.g, cx.name(node.inputs[0]!)), 9, 23);
}

/** NORMAL_FIELDS of the blocks i32[..., 2] of the node's input, as float32 [...]. */
function normalFieldsOf(cx: OnnxContext, node: Node): [string, string, string, string] {
  const blocks = cx.name(node.inputs[0]!);
  const words = [word(cx.g, blocks, 0), word(cx.g, blocks, 1)];
  return NORMAL_FIELDS.map(({ word: w, shift, bits }) => bitField(cx.g, words[w]!, shift, bits)) as [string, string, string, string];
}

/** The float32 operations of src/ir/normal.ts as ONNX nodes, one per operation. */
function float32Nodes(g: OnnxGraph): Float32Ops<string, string> {
  const binary = (type: string) => (a: string, b: string) => g.op1(type, [a, b]);
  return {
    constant: (value) => g.model.scalar("float32", value),
    add: binary("Add"),
    sub: binary("Sub"),
    mul: binary("Mul"),
    div: binary("Div"),
    sqrt: (a) => g.op1("Sqrt", [a]),
    min: binary("Min"),
    lessEqual: binary("LessOrEqual"),
    where: (c, a, b) => g.op1("Where", [c, a, b]),
    branch: (c, a, b) => g.op1("Where", [c, a(), b()]),
  };
}

export const onnxRandomRules: Record<string, OnnxRule> = {
  threefry2x32: (node, cx) => {
    const [key, counter] = node.inputs.map((id) => cx.name(id)) as [string, string];
    const rounds = threefryRounds(cx.g, word(cx.g, key, 0), word(cx.g, key, 1), word(cx.g, counter, 0), word(cx.g, counter, 1));
    // The words broadcast to [...B] only if some operand has every lead dim: make sure the shape is the output's.
    return [reshape(cx, cx.g.op1("Expand", [toI32(cx.g, stackWords(cx.g, rounds)), cx.g.model.ints(outShape(node, cx))]), outShape(node, cx))];
  },
  random_bits: (node, cx) => {
    const keys = inShape(node, cx).slice(0, -1);
    const perKey = (node.attrs.shape as number[]).reduce((n, d) => n * d, 1);
    const key = cx.name(node.inputs[0]!);
    const column = (w: number) => reshape(cx, word(cx.g, key, w), [...keys, 1]);
    return [reshape(cx, toI32(cx.g, randomWords(cx.g, column(0), column(1), keys, perKey)), outShape(node, cx))];
  },
  normal_from_bits: (node, cx) => [normalFromFields(float32Nodes(cx.g), normalFieldsOf(cx, node))],
  uniform_from_bits: (node, cx) => {
    const g = cx.g;
    const [min, max] = [node.attrs.min as number, node.attrs.max as number];
    const unit = g.op1("Mul", [mantissaOf(cx, node), g.model.scalar("float32", 2 ** -23)]);
    if (min === 0 && max === 1) return [unit];
    return [g.op1("Add", [g.op1("Mul", [unit, g.model.scalar("float32", max - min)]), g.model.scalar("float32", min)])];
  },
};
