/**
 * ONNX lowering of secure_sum_clients: the steps of src/ir/secure-sum.ts as graph nodes, so
 * a round with a secure sum stays one session call. The pair keys and mask words come from
 * the Threefry rounds of random.ts on uint32; masks, masked values and their sums are int64,
 * where every step is exact; float32 quantization and dequantization are the same float32
 * operations, in the same order, as the definition's. The count of values outside the
 * declared range is an extra output of the model that the session checks (FT309).
 */
import { checkCapacity, maskDistances, outOfRange, RING_LABELS, type SecureDType, type SecureSumAttrs } from "../../ir/secure-sum.js";
import type { OnnxGraph } from "./graph.js";
import { DataType } from "./proto.js";
import { randomWords, threefryRounds, u32, word } from "./random.js";
import { inShape, outShape, reshape, type OnnxContext, type OnnxRule } from "./rules.js";

const reshapeTo = (g: OnnxGraph, x: string, shape: readonly number[]): string => g.op1("Reshape", [x, g.model.ints(shape)]);

/**
 * Each client's masked values (q_i + mask_i) mod 2^bits as int64 [C, m], from the quantized
 * values q (int64 [C, m]) and the key (int32 [2]): maskedValues of src/ir/secure-sum.ts, the
 * ring relabelled by ringLabels.
 */
export function maskedValueNodes(g: OnnxGraph, q: string, key: string, clients: number, size: number, a: Pick<SecureSumAttrs, "bits" | "neighbours" | "grouped">): string {
  const low = 2 ** a.bits - 1;
  let acc = q;
  const distances = maskDistances(clients, a.neighbours, a.grouped === true);
  if (distances > 0 && size > 0) {
    const [k0, k1] = [word(g, key, 0), word(g, key, 1)];
    const labels = ringLabelNodes(g, k0, k1, clients);
    const iota = g.model.constant("uint32", [clients], Array.from({ length: clients }, (_, i) => i));
    // foldIn(key, a) for every label a, then foldIn(., d) per distance: the pair keys.
    const [c0, c1] = threefryRounds(g, k0, k1, iota, u32(g, 1));
    for (let d = 1; d <= distances; d++) {
      const [p0, p1] = threefryRounds(g, c0, c1, u32(g, d), u32(g, 1)).map((w) => reshapeTo(g, w, [clients, 1]));
      const words = g.op1("Cast", [g.op1("BitwiseAnd", [randomWords(g, p0!, p1!, [clients], size), u32(g, low)])], { to: DataType.INT64 });
      const from = g.op1("Mod", [g.op1("Add", [labels, g.model.scalar("int64", clients - d)]), g.model.scalar("int64", clients)]);
      acc = g.op1("Add", [acc, g.op1("Sub", [g.op1("Gather", [words, labels], { axis: 0 }), g.op1("Gather", [words, from], { axis: 0 })])]);
    }
  }
  return g.op1("BitwiseAnd", [acc, g.model.scalar("int64", low)]);
}

/** ringLabels of src/ir/secure-sum.ts: the rank of each client's word (unsigned, ties by client order), int64 [C]. */
function ringLabelNodes(g: OnnxGraph, k0: string, k1: string, clients: number): string {
  const [r0, r1] = threefryRounds(g, k0, k1, u32(g, RING_LABELS), u32(g, 1)).map((w) => reshapeTo(g, w, [1, 1]));
  const words = g.op1("Cast", [reshapeTo(g, randomWords(g, r0!, r1!, [1], clients), [clients])], { to: DataType.INT64 });
  const mine = reshapeTo(g, words, [clients, 1]);
  const others = reshapeTo(g, words, [1, clients]);
  const earlier = g.model.constant("bool", [clients, clients], Array.from({ length: clients * clients }, (_, k) => (k % clients < Math.floor(k / clients) ? 1 : 0)));
  const before = g.op1("Or", [g.op1("Less", [others, mine]), g.op1("And", [g.op1("Equal", [others, mine]), earlier])]);
  return g.op1("ReduceSum", [g.op1("Cast", [before], { to: DataType.INT64 }), g.model.ints([1])], { keepdims: 0 });
}

/** The quantized values (int64 [C, m]) and the count of values outside [low, high] (int64 []). */
function quantized(g: OnnxGraph, x: string, dtype: SecureDType, a: SecureSumAttrs): { q: string; outside: string } {
  const bound = (v: number) => g.model.scalar(dtype, v);
  let bad = g.op1("Or", [g.op1("Less", [x, bound(a.low)]), g.op1("Greater", [x, bound(a.high)])]);
  let q: string;
  if (dtype === "float32") {
    bad = g.op1("Or", [bad, g.op1("IsNaN", [x])]);
    const scaled = g.op1("Mul", [g.op1("Sub", [x, bound(a.low)]), bound(a.scale)]);
    q = g.op1("Cast", [g.op1("Floor", [g.op1("Add", [scaled, bound(0.5)])])], { to: DataType.INT64 });
  } else {
    q = g.op1("Sub", [g.op1("Cast", [x], { to: DataType.INT64 }), g.model.scalar("int64", a.low)]);
  }
  return { q, outside: g.op1("ReduceSum", [g.op1("Cast", [bad], { to: DataType.INT64 })], { keepdims: 0 }) };
}

export const onnxSecureRules: Record<string, OnnxRule> = {
  secure_sum_clients: (node, cx: OnnxContext) => {
    const g = cx.g;
    const a = node.attrs as unknown as SecureSumAttrs;
    const dtype = cx.types[node.inputs[0]!]!.dtype as SecureDType;
    const [clients, ...member] = inShape(node, cx) as [number, ...number[]];
    const size = member.reduce((n, d) => n * d, 1);
    checkCapacity("secureSum", clients, dtype, a);
    const { q, outside } = quantized(g, reshape(cx, cx.name(node.inputs[0]!), [clients, size]), dtype, a);
    g.checks.push({ value: outside, fail: (count) => outOfRange("secureSum", count, a) });
    const masked = maskedValueNodes(g, q, cx.name(node.inputs[1]!), clients, size, a);
    const low = g.model.scalar("int64", 2 ** a.bits - 1);
    const sum = g.op1("BitwiseAnd", [g.op1("ReduceSum", [masked, g.model.ints([0])], { keepdims: 0 }), low]);
    const result =
      dtype === "float32"
        ? g.op1("Add", [g.op1("Div", [g.op1("Cast", [sum], { to: DataType.FLOAT }), g.model.scalar("float32", a.scale)]), g.model.scalar("float32", Math.fround(clients * a.low))])
        : g.op1("Cast", [g.op1("Add", [sum, g.model.scalar("int64", clients * a.low)])], { to: DataType.INT32 });
    return [reshape(cx, result, outShape(node, cx))];
  },
};
