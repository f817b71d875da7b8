/**
 * Lowering to TensorFlow.js kernels, one rule per primitive. Shapes are concrete here (the
 * program was specialised), so rules read them from the node's value types. Where a backend
 * lacks a kernel or runs a form slowly, the rule picks another form (see the matmul and conv
 * rules); src/lower/tfjs-forms.ts holds those alternatives.
 */
import * as tf from "@tensorflow/tfjs";
import type { Attrs } from "../ir/primitives.js";
import type { DType, Node, ValueType } from "../ir/types.js";
import { type Kernel, type LoweringContext, type LoweringRule, shapeOf } from "./executable.js";
import { tfjsRandomRules } from "./tfjs-random.js";
import { tfjsSecureRules } from "./tfjs-secure.js";
import { tfjsSequenceRules } from "./tfjs-sequence.js";
import { boolSelect, broadcastTensor, castForm, KERNEL_MAX_RANK, reductionForm, transposeForm, matmulForm, oneHotForm, softmaxAlong, unstack, withinKernelRank } from "./tfjs-forms.js";
import { conv2dFilterGradient, conv2dForm, maxPoolGradient, maxPoolPick } from "./tfjs-windows.js";

const outShape = (node: Node, ctx: LoweringContext, i = 0) => shapeOf(ctx, node.outputs[i]!);
const inShape = (node: Node, ctx: LoweringContext, i: number) => shapeOf(ctx, node.inputs[i]!);

/**
 * A tfjs kernel called directly. The IR is typed and checked already, so the op wrappers'
 * argument conversion and checks are redundant, and on wasm they cost as much again as a
 * small kernel itself.
 */
function kernelCall(name: string, inputNames: readonly string[], attrs: Record<string, unknown> = {}): Kernel {
  return (ins) => {
    const named: Record<string, tf.Tensor> = {};
    inputNames.forEach((n, i) => (named[n] = ins[i]!));
    return [tf.engine().runKernel(name, named, attrs as never) as tf.Tensor];
  };
}
const elementwise =
  (name: string, inputNames: readonly string[], attrs?: (node: Node) => Record<string, unknown>): LoweringRule =>
  (node, ctx) =>
    withinKernelRank(
      kernelCall(name, inputNames, attrs?.(node)),
      node.inputs.map((id) => shapeOf(ctx, id)),
      outShape(node, ctx),
      ctx.backend,
    );
const unary = (name: string): LoweringRule => elementwise(name, ["x"]);
/** x compared with a zero of its dtype by a binary kernel. */
function binaryWithZero(name: string, node: Node, ctx: LoweringContext): Kernel {
  const zero = ctx.own(tf.scalar(0, ctx.types[node.inputs[0]!]!.dtype));
  return withinKernelRank(([x]) => [tf.engine().runKernel(name, { a: x!, b: zero }) as tf.Tensor], [inShape(node, ctx, 0)], outShape(node, ctx), ctx.backend);
}
const binary = (name: string): LoweringRule => elementwise(name, ["a", "b"]);

/** Axes of a reduction (undefined = all, as tfjs takes it). */
const axesOf = (attrs: Attrs): number[] | undefined => (attrs.axes === null ? undefined : (attrs.axes as number[]));

/** A reduction over attrs.axes (all when null), in the form the backend runs (reductionForm). */
function reduction(f: (x: tf.Tensor, axes: number[], keepDims: boolean) => tf.Tensor): LoweringRule {
  return (node, ctx) => {
    const rank = inShape(node, ctx, 0).length;
    const axes = (axesOf(node.attrs) ?? [...Array(rank).keys()]).map((a) => (a < 0 ? a + rank : a));
    const keepDims = node.attrs.keepDims === true;
    return reductionForm((x, at) => f(x, at, keepDims), axes, rank, outShape(node, ctx), ctx.types[node.inputs[0]!]!.dtype, ctx.backend);
  };
}

/** x with unit dims inserted at `axes` of the target, then broadcast to the target shape. */
function broadcastInto(node: Node, ctx: LoweringContext): Kernel {
  const target = outShape(node, ctx);
  const axes = node.attrs.axes as number[] | undefined;
  const source = inShape(node, ctx, 0);
  let lifted = source;
  if (axes !== undefined) {
    const at = axes.map((a) => (a < 0 ? a + target.length : a));
    let next = 0;
    lifted = target.map((_, i) => (at.includes(i) ? 1 : source[next++]!));
  }
  return ([x]) => {
    const shaped = lifted === source ? x! : x!.reshape(lifted);
    const out = broadcastTensor(shaped, target, ctx.backend);
    if (shaped !== x) shaped.dispose();
    return [out];
  };
}

/** x summed down to the target shape (over attrs.axes first, when given). */
function sumInto(node: Node, ctx: LoweringContext): Kernel {
  const target = outShape(node, ctx);
  const source = inShape(node, ctx, 0);
  const first = node.attrs.axes as number[] | undefined;
  const afterFirst = first === undefined ? source : source.filter((_, i) => !first.map((a) => (a < 0 ? a + source.length : a)).includes(i));
  const lead = afterFirst.length - target.length;
  const rest = afterFirst.map((d, i) => i).filter((i) => i < lead || (target[i - lead] === 1 && afterFirst[i] !== 1));
  return ([x]) => {
    let t = first === undefined ? x! : tf.sum(x!, first);
    if (rest.length > 0) {
      const summed = tf.sum(t, rest, true);
      if (t !== x) t.dispose();
      t = summed;
    }
    const out = t.reshape(target);
    if (t !== x) t.dispose();
    return [out];
  };
}

const constantOf = (attrs: Attrs): Kernel => {
  const dtype = attrs.dtype as DType;
  const shape = attrs.shape as number[];
  return () => [typeof attrs.value === "number" ? tf.fill(shape, attrs.value, dtype) : tf.tensor(attrs.value as tf.TensorLike, shape, dtype)];
};

/**
 * log1p(x) where the backend's Log1p kernel is log(1 + x) (tfjs wasm's gives 0 for 1e-8):
 * Goldberg's form log(u) * x / (u - 1) with u = 1 + x, exact to a few ulps because u - 1 is
 * exact; x itself where u rounds to 1 (there log1p(x) = x to float32 precision) and where u
 * is +inf. Computed on the flattened entries, so that Select's rank limit (webgpu) never bites.
 */
const log1pForm: Kernel = ([x]) => [
  tf.tidy(() => {
    const flat = x!.reshape([x!.size]);
    const u = tf.add(flat, 1);
    const ratio = tf.mul(tf.log(u), tf.div(flat, tf.sub(u, 1)));
    const exact = tf.logicalOr(tf.equal(u, 1), tf.equal(u, Infinity));
    return tf.where(exact, flat, ratio).reshape(x!.shape);
  }),
];

/**
 * int32 mod without dividing by zero (tfjs wasm traps on it): a mod b with every zero divisor
 * replaced by 1 (giving 0 there), plus a where b is 0, since a mod 0 is a (as XLA and so JAX).
 */
const intModForm: Kernel = ([a, b]) => [
  tf.tidy(() => {
    const zero = tf.cast(tf.equal(b!, 0), "int32");
    return tf.add(tf.mod(a!, tf.add(b!, zero)), tf.mul(a!, zero));
  }),
];

export const tfjsRules: Record<string, LoweringRule> = {
  ...tfjsRandomRules,
  ...tfjsSecureRules,
  ...tfjsSequenceRules,
  neg: unary("Neg"),
  abs: unary("Abs"),
  sign: unary("Sign"),
  relu: unary("Relu"),
  exp: unary("Exp"),
  log: unary("Log"),
  sqrt: unary("Sqrt"),
  sigmoid: unary("Sigmoid"),
  tanh: unary("Tanh"),
  sin: unary("Sin"),
  cos: unary("Cos"),
  log1p: (node, ctx) => (ctx.backend === "cpu" ? unary("Log1p")(node, ctx) : log1pForm),
  floor: unary("Floor"),
  round: unary("Round"),
  logical_not: unary("LogicalNot"),
  stop_gradient: () => ([x]) => [x!.clone()],
  // tfjs wasm's Cast to bool truncates to a byte (255 for -1.5): bool is x != 0, on every backend.
  cast: (node, ctx) =>
    node.attrs.dtype === "bool"
      ? binaryWithZero("NotEqual", node, ctx)
      : withinKernelRank(castForm(ctx.types[node.inputs[0]!]!.dtype, node.attrs.dtype as DType, ctx.backend), [inShape(node, ctx, 0)], outShape(node, ctx), ctx.backend),
  add: binary("Add"),
  sub: binary("Sub"),
  mul: binary("Multiply"),
  div: binary("RealDiv"),
  pow: binary("Pow"),
  mod: (node, ctx) =>
    ctx.types[node.outputs[0]!]!.dtype === "int32"
      ? withinKernelRank(intModForm, node.inputs.map((id) => shapeOf(ctx, id)), outShape(node, ctx), ctx.backend)
      : binary("Mod")(node, ctx),
  maximum: binary("Maximum"),
  minimum: binary("Minimum"),
  less: binary("Less"),
  less_equal: binary("LessEqual"),
  greater: binary("Greater"),
  greater_equal: binary("GreaterEqual"),
  equal: binary("Equal"),
  not_equal: binary("NotEqual"),
  logical_and: binary("LogicalAnd"),
  logical_or: binary("LogicalOr"),
  where: (node, ctx) => {
    const shape = outShape(node, ctx);
    if (ctx.types[node.outputs[0]!]!.dtype === "bool" && ctx.backend === "wasm") return boolSelect;
    const select = withinKernelRank(
      ([c, t, e]) => [tf.engine().runKernel("Select", { condition: c!, t: t!, e: e! }) as tf.Tensor],
      [shape, shape, shape],
      shape,
      ctx.backend,
      KERNEL_MAX_RANK.Select![ctx.backend],
    );
    return (ins) => {
      // tfjs's select wants equal shapes: broadcast the operands that need it.
      const full = ins.map((t) => (t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]) ? t : broadcastTensor(t, shape, ctx.backend)));
      const [out] = select(full);
      full.forEach((t, i) => t !== ins[i] && t.dispose());
      return [out!];
    };
  },

  constant: (node) => constantOf(node.attrs),
  fill: (node) => constantOf(node.attrs),
  iota: (node) => () => [tf.range(0, node.attrs.length as number, 1, "int32")],
  dim_size: (node, ctx) => {
    const shape = inShape(node, ctx, 0);
    const axes = axesOf(node.attrs) ?? shape.map((_, i) => i);
    const count = axes.reduce((n, a) => n * shape[a < 0 ? a + shape.length : a]!, 1);
    return () => [tf.scalar(count, "float32")];
  },

  matmul: (node, ctx) => matmulForm(inShape(node, ctx, 0), inShape(node, ctx, 1), outShape(node, ctx), ctx.backend, ctx.types[node.outputs[0]!]!.dtype),
  transpose: (node, ctx) => {
    const rank = inShape(node, ctx, 0).length;
    const perm = (node.attrs.perm as number[] | null) ?? [...Array(rank).keys()].reverse();
    return transposeForm(perm, ctx.types[node.inputs[0]!]!.dtype, ctx.backend);
  },
  reshape: (node, ctx) => kernelCall("Reshape", ["x"], { shape: outShape(node, ctx) }),
  reshape_like: (node, ctx) => kernelCall("Reshape", ["x"], { shape: outShape(node, ctx) }),
  expand_dims: (node) => ([x]) => [tf.expandDims(x!, node.attrs.axis as number)],
  broadcast_to: broadcastInto,
  broadcast_like: broadcastInto,
  unbroadcast: sumInto,
  concat: (node) => (xs) => [tf.concat(xs as tf.Tensor[], node.attrs.axis as number)],
  slice: (node) => ([x]) => [tf.slice(x!, node.attrs.begin as number[], node.attrs.size as number[])],
  pad: (node) => {
    const before = node.attrs.before as number[];
    const after = node.attrs.after as number[];
    const paddings = before.map((b, i) => [b, after[i]!] as [number, number]);
    return ([x]) => [tf.pad(x!, paddings)];
  },
  one_hot: (node, ctx) => oneHotForm(node.attrs.depth as number, ctx),
  reduce_sum: reduction((x, axis, keepDims) => tf.engine().runKernel("Sum", { x }, { axis, keepDims }) as tf.Tensor),
  reduce_mean: reduction((x, axes, keep) => tf.mean(x, axes, keep)),
  reduce_max: reduction((x, axes, keep) => tf.max(x, axes, keep)),
  reduce_min: reduction((x, axes, keep) => tf.min(x, axes, keep)),
  argmax: (node, ctx) => {
    const rank = inShape(node, ctx, 0).length;
    const axis = node.attrs.axis as number;
    const out = outShape(node, ctx);
    // tfjs-backend-webgpu's ArgMax of a rank-1 tensor returns shape [1], not the scalar [].
    const argMax = (x: tf.Tensor, at: number): tf.Tensor => {
      const index = tf.argMax(x, at);
      if (index.rank === out.length) return index;
      const scalar = index.reshape(out as number[]);
      index.dispose();
      return scalar;
    };
    return reductionForm((x, [at]) => argMax(x, at!), [axis < 0 ? axis + rank : axis], rank, out, ctx.types[node.inputs[0]!]!.dtype, ctx.backend);
  },
  softmax: (node, ctx) => softmaxAlong(tf.softmax, node.attrs.axis as number, inShape(node, ctx, 0).length),
  log_softmax: (node, ctx) => softmaxAlong(tf.logSoftmax, node.attrs.axis as number, inShape(node, ctx, 0).length),

  conv2d: (node, ctx) => conv2dForm(node.attrs, inShape(node, ctx, 0), inShape(node, ctx, 1), outShape(node, ctx), ctx.backend),
  conv2d_grad_input: (node, ctx) => {
    const { strides, padding } = node.attrs as { strides: [number, number]; padding: "same" | "valid" };
    const inputShape = inShape(node, ctx, 2) as [number, number, number, number];
    return ([ct, f]) => [tf.conv2dTranspose(ct! as tf.Tensor4D, f! as tf.Tensor4D, inputShape, strides, padding)];
  },
  conv2d_grad_filter: (node, ctx) => conv2dFilterGradient(node.attrs, inShape(node, ctx, 0), inShape(node, ctx, 2), ctx.backend),
  max_pool: (node) => {
    const { window, strides, padding } = node.attrs as { window: [number, number]; strides: [number, number]; padding: "same" | "valid" };
    return ([x]) => [tf.maxPool(x! as tf.Tensor4D, window, strides, padding)];
  },
  max_pool_grad: (node, ctx) => maxPoolGradient(node.attrs, inShape(node, ctx, 0), ctx.backend),
  max_pool_pick: (node, ctx) => maxPoolPick(node.attrs, inShape(node, ctx, 0)),

  scan: (node, ctx) => scanKernel(node, ctx),
  client_loop: (node, ctx) => clientLoopKernel(node, ctx),
};

/** A loop over steps: carries thread through, xs are unstacked once, ys stacked at the end. */
function scanKernel(node: Node, ctx: LoweringContext): Kernel {
  const body = ctx.compile(node.bodies![0]!);
  const carries = node.attrs.carries as number;
  const captured = node.captures?.[0] ?? 0;
  const reverse = node.attrs.reverse === true;
  const outTypes: ValueType[] = node.outputs.map((id) => ctx.types[id]!);
  const length = (outTypes[carries]?.shape[0] as number | undefined) ?? (node.attrs.length as number);
  return (inputs) => {
    const operands = inputs.slice(0, inputs.length - captured);
    const caps = inputs.slice(inputs.length - captured);
    const xsSteps = operands.slice(carries).map((x) => unstack(x, ctx.backend));
    const steps = xsSteps[0]?.length ?? length;
    let carry = operands.slice(0, carries);
    const ys: tf.Tensor[][] = [];
    for (let k = 0; k < steps; k++) {
      const t = reverse ? steps - 1 - k : k;
      const outs = body.run([...carry, ...xsSteps.map((x) => x[t]!), ...caps]);
      if (k > 0) carry.forEach((c) => c.dispose());
      carry = outs.slice(0, carries);
      ys[t] = outs.slice(carries);
    }
    xsSteps.forEach((x) => x.forEach((s) => s.dispose()));
    // With no steps the carry is still the caller's: hand back copies.
    const finalCarry = steps === 0 ? carry.map((c) => c.clone()) : carry;
    const stacked = outTypes.slice(carries).map((type, i) => {
      if (steps === 0) return tf.zeros(type.shape as number[], type.dtype);
      const column = ys.map((y) => y[i]!);
      const out = tf.stack(column);
      column.forEach((c) => c.dispose());
      return out;
    });
    return [...finalCarry, ...stacked];
  };
}

/** The per-client form of a map: its function runs once per client on 2-D-sized members. */
function clientLoopKernel(node: Node, ctx: LoweringContext): Kernel {
  const body = ctx.compile(node.bodies![0]!);
  const batched = node.attrs.batched as boolean[];
  const clients = node.attrs.clients as number;
  const captured = node.captures?.[0] ?? 0;
  return (inputs) => {
    const operands = inputs.slice(0, inputs.length - captured);
    const caps = inputs.slice(inputs.length - captured);
    const members = operands.map((x, i) => (batched[i] ? unstack(x, ctx.backend) : undefined));
    const results: tf.Tensor[][] = [];
    for (let c = 0; c < clients; c++) {
      results.push(body.run([...operands.map((x, i) => members[i]?.[c] ?? x), ...caps]));
    }
    members.forEach((m) => m?.forEach((t) => t.dispose()));
    return node.outputs.map((_, i) => {
      const column = results.map((r) => r[i]!);
      const out = tf.stack(column);
      column.forEach((t) => t.dispose());
      return out;
    });
  };
}
