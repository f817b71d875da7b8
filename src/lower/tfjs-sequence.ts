/**
 * tfjs lowering of the primitives along one axis (src/ir/sequence-primitives.ts). Each works
 * on the operand viewed as [outer, n, inner] (a reshape, no copy), so that the kernels see
 * rank 3 whatever the rank (client batching adds a dim, nested maps more) and every axis is
 * the middle one.
 */
import * as tf from "@tensorflow/tfjs";
import type { Node } from "../ir/types.js";
import type { LoweringContext, LoweringRule } from "./executable.js";

const shapeOf = (ctx: LoweringContext, id: number): number[] => ctx.types[id]!.shape as number[];
const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

/** The node's first operand as [outer, n, inner] around attrs.axis. */
function lanes(node: Node, ctx: LoweringContext): { shape: number[]; view: [number, number, number]; axis: number } {
  const shape = shapeOf(ctx, node.inputs[0]!);
  const given = node.attrs.axis as number;
  const axis = given < 0 ? given + shape.length : given;
  return { shape, axis, view: [product(shape.slice(0, axis)), shape[axis]!, product(shape.slice(axis + 1))] };
}

export const tfjsSequenceRules: Record<string, LoweringRule> = {
  cumsum: (node, ctx) => {
    const { shape, view } = lanes(node, ctx);
    const attrs = { axis: 1, exclusive: node.attrs.exclusive === true, reverse: node.attrs.reverse === true };
    return ([x]) =>
      tf.tidy(() => {
        const summed = tf.engine().runKernel("Cumsum", { x: x!.reshape(view) }, attrs as never) as tf.Tensor;
        return [summed.reshape(shape)];
      });
  },
};
