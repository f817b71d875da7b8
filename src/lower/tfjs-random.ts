/**
 * tfjs lowering of the random-number primitives. tfjs 4.22 has BitwiseAnd on cpu and wasm
 * but no xor, or or shift kernels. Composed from it and int32 arithmetic (xor as
 * a + b - 2 (a & b), a rotation as masked multiplications by powers of two plus a floor
 * division) a round costs over a dozen kernels, a block some 300, each a dispatch, and the
 * cpu backend's int32 Mul goes through float64 products that lose bits past 2^53 unless every
 * operand is masked first. These kernels instead read their operands (keys, counters, words)
 * and run the generator's definition (src/ir/threefry.ts, src/ir/normal.ts) on the host:
 * the same code as the reference interpreter, so the same bits.
 */
import * as tf from "@tensorflow/tfjs";
import type { Node } from "../ir/types.js";
import { normalsFromWords } from "../ir/normal.js";
import { randomBits, threefryPairs, uniformFromWord } from "../ir/threefry.js";
import { type LoweringRule, shapeOf } from "./executable.js";

const words = (t: tf.Tensor): Int32Array => t.dataSync() as Int32Array;

export const tfjsRandomRules: Record<string, LoweringRule> = {
  threefry2x32: (node: Node, ctx) => {
    const out = shapeOf(ctx, node.outputs[0]!);
    const [keyShape, counterShape] = node.inputs.map((id) => shapeOf(ctx, id));
    return ([key, counter]) => {
      const blocks = threefryPairs({ shape: keyShape!, data: words(key!) }, { shape: counterShape!, data: words(counter!) }, out.slice(0, -1));
      return [tf.tensor(blocks.data, out, "int32")];
    };
  },
  random_bits: (node, ctx) => {
    const out = shapeOf(ctx, node.outputs[0]!);
    const perKey = (node.attrs.shape as number[]).reduce((n, d) => n * d, 1);
    return ([key]) => [tf.tensor(randomBits(words(key!), perKey), out, "int32")];
  },
  normal_from_bits: () => ([x]) => [tf.tensor(normalsFromWords(words(x!)), x!.shape.slice(0, -1), "float32")],
  uniform_from_bits: (node) => {
    const [min, max] = [node.attrs.min as number, node.attrs.max as number];
    return ([x]) => [tf.tensor(Float32Array.from(words(x!), (w) => uniformFromWord(w, min, max)), x!.shape, "float32")];
  },
};
