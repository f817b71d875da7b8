/**
 * tfjs lowering of the random-number primitives. tfjs has no 32-bit xor or shift kernels on
 * cpu and wasm (bitwiseAnd only, on some backends), and composing them from its int32
 * arithmetic would take dozens of kernels per round, some of which (FloorDiv, Mod on wasm)
 * compute through float32 and so are not exact beyond 2^24. These kernels therefore read
 * their (small) key and counter operands and run the generator's definition
 * (src/ir/threefry.ts) on the host: the same code as the reference interpreter, bit for bit.
 */
import * as tf from "@tensorflow/tfjs";
import type { Node } from "../ir/types.js";
import { normalsFromWords } from "../ir/normal.js";
import { randomBits, threefryPairs, uniformFromWord } from "../ir/threefry.js";
import type { LoweringContext, LoweringRule } from "./executable.js";

const shapeOf = (ctx: LoweringContext, id: number): number[] => ctx.types[id]!.shape as number[];
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
  normal_from_bits: () => ([x]) => [tf.tensor(normalsFromWords(words(x!)), x!.shape, "float32")],
  uniform_from_bits: (node) => {
    const [min, max] = [node.attrs.min as number, node.attrs.max as number];
    return ([x]) => [tf.tensor(Float32Array.from(words(x!), (w) => uniformFromWord(w, min, max)), x!.shape, "float32")];
  },
};
