/**
 * tfjs lowering of the primitives along one axis (src/ir/sequence-primitives.ts). Each works
 * on the operand viewed as [outer, n, inner] (a reshape, no copy), so that the kernels see
 * rank 3 whatever the rank (client batching adds a dim, nested maps more) and every axis is
 * the middle one.
 */
import * as tf from "@tensorflow/tfjs";
import type { Node } from "../ir/types.js";
import { type LoweringContext, type LoweringRule, shapeOf } from "./executable.js";
import { castForm, transposeForm } from "./tfjs-forms.js";

const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

/** The node's operand `input` as [outer, n, inner] around attrs.axis. */
function lanes(node: Node, ctx: LoweringContext, input = 0): { shape: number[]; view: [number, number, number]; axis: number } {
  const shape = shapeOf(ctx, node.inputs[input]!);
  const given = node.attrs.axis as number;
  const axis = given < 0 ? given + shape.length : given;
  return { shape, axis, view: [product(shape.slice(0, axis)), shape[axis]!, product(shape.slice(axis + 1))] };
}

/** The node's indices (input 1) flattened, whether each lies in [0, n), and the same with those outside replaced by `outside`. */
function checkedIndices(indices: tf.Tensor, n: number, outside: number): { valid: tf.Tensor; safe: tf.Tensor } {
  const flat = indices.reshape([-1]);
  const valid = tf.logicalAnd(tf.greaterEqual(flat, 0), tf.less(flat, n));
  return { valid, safe: tf.where(valid, flat, tf.fill(flat.shape, outside, "int32")) };
}

/**
 * Flat positions in x viewed as [outer, n, inner] of per-lane indices viewed as [outer, m,
 * inner]: (o n + index) inner + i. tfjs has no GatherElements, so per-lane lookups gather and
 * scatter through these on the flattened tensor.
 */
function flatPositions(rows: tf.Tensor, [outer, n, inner]: readonly [number, number, number]): tf.Tensor {
  const lane = tf.range(0, outer, 1, "int32").reshape([outer, 1, 1]);
  const within = tf.range(0, inner, 1, "int32").reshape([1, 1, inner]);
  const int = (v: number) => tf.scalar(v, "int32");
  return tf.add(tf.mul(tf.add(tf.mul(lane, int(n)), rows), int(inner)), within).reshape([-1]);
}

export const tfjsSequenceRules: Record<string, LoweringRule> = {
  // The exclusive sum is the inclusive one moved by one place (exact). tfjs webgpu 4.22's
  // Cumsum gives wrong sums (found by the differential tests on llvmpipe), so there the
  // inclusive sum is a product with a triangular matrix of ones, in float32 (exact for
  // int32 sums below 2^24).
  cumsum: (node, ctx) => {
    const { shape, view } = lanes(node, ctx);
    const [outer, n, inner] = view;
    const reverse = node.attrs.reverse === true;
    const exclusive = node.attrs.exclusive === true && n > 0;
    const dtype = ctx.types[node.inputs[0]!]!.dtype;
    const inclusive = (() => {
      if (ctx.backend !== "webgpu") {
        return (x: tf.Tensor) => tf.engine().runKernel("Cumsum", { x }, { axis: 1, exclusive: false, reverse } as never) as tf.Tensor;
      }
      const triangle = ctx.own(tf.tidy(() => tf.linalg.bandPart(tf.ones([n, n]), reverse ? 0 : -1, reverse ? -1 : 0)));
      const [toFloat, fromFloat] = [castForm(dtype, "float32", ctx.backend), castForm("float32", dtype, ctx.backend)];
      return (x: tf.Tensor) => {
        const summed = tf.matMul(tf.broadcastTo(triangle, [outer, n, n]), toFloat([x])[0]!);
        return dtype === "float32" ? summed : fromFloat([summed])[0]!;
      };
    })();
    return ([x]) =>
      tf.tidy(() => {
        const summed = inclusive(x!.reshape(view));
        if (!exclusive) return [summed.reshape(shape)];
        const zeros = tf.zeros([outer, 1, inner], summed.dtype);
        const kept = summed.slice([0, reverse ? 1 : 0, 0], [outer, n - 1, inner]);
        return [tf.concat(reverse ? [kept, zeros] : [zeros, kept], 1).reshape(shape)];
      });
  },
  // GatherV2 throws on an index out of range: such rows read row 0, then become zeros.
  take: (node, ctx) => {
    const { view } = lanes(node, ctx);
    const out = shapeOf(ctx, node.outputs[0]!);
    return ([x, indices]) =>
      tf.tidy(() => {
        const { valid, safe } = checkedIndices(indices!, view[1], 0);
        const rows = tf.gather(x!.reshape(view), safe, 1);
        const mask = tf.broadcastTo(valid.reshape([1, -1, 1]), rows.shape);
        return [tf.where(mask, rows, tf.zerosLike(rows)).reshape(out)];
      });
  },
  // Rows out of range add into an extra row n, dropped after; ScatterNd sums repeated indices.
  take_grad: (node, ctx) => {
    const {
      shape: table,
      view: [outer, n, inner],
    } = lanes(node, ctx, 2);
    return ([ct, indices]) =>
      tf.tidy(() => {
        const { safe } = checkedIndices(indices!, n, n);
        const updates = ct!.reshape([outer, safe.size, inner]).transpose([1, 0, 2]);
        const summed = tf.scatterND(safe.reshape([-1, 1]), updates, [n + 1, outer, inner]);
        return [summed.slice([0, 0, 0], [n, outer, inner]).transpose([1, 0, 2]).reshape(table)];
      });
  },
  take_along: (node, ctx) => {
    const { view } = lanes(node, ctx);
    const { view: indexView } = lanes(node, ctx, 1);
    return ([x, indices]) =>
      tf.tidy(() => {
        const { valid, safe } = checkedIndices(indices!, view[1], 0);
        const picked = tf.gather(x!.reshape([-1]), flatPositions(safe.reshape(indexView), view));
        return [tf.where(valid, picked, tf.zerosLike(picked)).reshape(indices!.shape)];
      });
  },
  // Entries whose index is outside [0, n) add into an extra position n of their lane, dropped after.
  take_along_grad: (node, ctx) => {
    const { shape, view } = lanes(node, ctx, 2);
    const { view: indexView } = lanes(node, ctx, 1);
    const [outer, n, inner] = view;
    return ([ct, indices]) =>
      tf.tidy(() => {
        const { safe } = checkedIndices(indices!, n, n);
        const positions = flatPositions(safe.reshape(indexView), [outer, n + 1, inner]).reshape([-1, 1]);
        const summed = tf.scatterND(positions, ct!.reshape([-1]), [outer * (n + 1) * inner]);
        return [summed.reshape([outer, n + 1, inner]).slice([0, 0, 0], [outer, n, inner]).reshape(shape)];
      });
  },
  // tfjs's TopK takes the largest along the last axis, the lower position first among equals
  // (so an ascending sort is TopK of -x); other axes move last and back.
  sort: (node, ctx) => {
    const { view } = lanes(node, ctx);
    const [outer, n, inner] = view;
    const out = shapeOf(ctx, node.outputs[0]!);
    const k = node.attrs.k === null ? n : (node.attrs.k as number);
    const descending = node.attrs.descending === true;
    // Integer lanes and the int32 positions move through transposeForm: tfjs webgpu cannot
    // transpose integers itself (tfjs-forms.ts).
    const dtype = ctx.types[node.inputs[0]!]!.dtype;
    const [moveValues, movePositions] = [dtype, "int32"].map((d) => transposeForm([0, 2, 1], d, ctx.backend));
    return ([x]) =>
      tf.tidy(() => {
        const lanesLast = moveValues!([x!.reshape(view)])[0]!;
        const { values, indices } = tf.topk(descending ? lanesLast : tf.neg(lanesLast), k, true);
        const back = (t: tf.Tensor, move: typeof moveValues) => move!([t.reshape([outer, inner, k])])[0]!.reshape(out);
        return [back(descending ? values : tf.neg(values), moveValues), back(indices, movePositions)];
      });
  },
};
