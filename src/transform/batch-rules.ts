/**
 * Client-batching rules, one per primitive (the vmap of SPEC section 6): a CLIENTS value is
 * one tensor whose axis 0 is the client axis ("batched"); an all-equal or unplaced value is
 * one member ("unbatched", never materialised C times unless an operation needs it).
 *
 * A rule receives the node's inputs in the batched program, with the node's original output
 * types (concrete after specialisation), and emits the batched computation. Rules that find
 * the operation is a no-op return their input unchanged.
 */
import type { Tracer } from "../front/trace.js";
import type { Attrs } from "../ir/primitives.js";
import type { ValueType } from "../ir/types.js";
import type { BatchContext, BatchRule } from "./batch-types.js";
import { materialize, materializeIn, prim, primOutputs, reducedAxes } from "./emit.js";
import { robustBatchRules } from "./robust-batch-rules.js";

const dims = (shape: ValueType["shape"]): number[] => shape as number[];
const sameShape = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((d, i) => d === b[i]);
const memberRank = (ctx: BatchContext, t: Tracer) => t.shape.length - (ctx.isBatched(t) ? 1 : 0);
const anyBatched = (ctx: BatchContext) => ctx.inputs.some((t) => ctx.isBatched(t));
/** The output's shape in the batched program. */
const outShape = (ctx: BatchContext, batched: boolean, i = 0) => [...(batched ? [ctx.clients] : []), ...dims(ctx.outTypes[i]!.shape)];

/** A reshape to a concrete shape, or nothing when the shape is already that. */
export function reshapeTo(t: Tracer, shape: readonly number[]): Tracer {
  return sameShape(t.shape, shape) ? t : prim("reshape", [t], { shape: [...shape] });
}

/** Inserts unit dims after the client axis until the member has `rank` dims (aligning from the right). */
function liftMember(ctx: BatchContext, t: Tracer, rank: number, batched = ctx.isBatched(t)): Tracer {
  const missing = rank - (t.shape.length - (batched ? 1 : 0));
  if (!batched || missing <= 0) return t;
  const shape = dims(t.shape);
  return reshapeTo(t, [shape[0]!, ...Array<number>(missing).fill(1), ...shape.slice(1)]);
}


/** Same op; batched operands get unit dims so that numpy alignment keeps the client axis first. */
const elementwise: BatchRule = (ctx) => {
  const rank = Math.max(...ctx.inputs.map((t) => memberRank(ctx, t)));
  return [prim(ctx.node.op, ctx.inputs.map((t) => liftMember(ctx, t, rank)), ctx.node.attrs)];
};

/** An axis of the member, as an axis of the batched tensor. */
const shiftAxis = (axis: number, rank: number, batched: boolean) => (axis < 0 ? axis + rank : axis) + (batched ? 1 : 0);

/** Reductions and other axis ops: member axes move one to the right. */
function withAxes(rewrite: (attrs: Attrs, rank: number) => Attrs): BatchRule {
  return (ctx) => {
    const x = ctx.inputs[0]!;
    if (!ctx.isBatched(x)) return [prim(ctx.node.op, ctx.inputs, ctx.node.attrs)];
    return [prim(ctx.node.op, ctx.inputs, rewrite(ctx.node.attrs, memberRank(ctx, x)))];
  };
}
const shiftAxes = (attrs: Attrs, rank: number): Attrs => ({
  ...attrs,
  axes: reducedAxes(attrs, rank).map((a) => a + 1),
});
const shiftAxisAttr = (attrs: Attrs, rank: number): Attrs => ({ ...attrs, axis: shiftAxis(attrs.axis as number, rank, true) });

/** Shape-only ops: a reshape to the output's concrete shape. */
const reshapeToOutput: BatchRule = (ctx) => [reshapeTo(ctx.inputs[0]!, outShape(ctx, ctx.isBatched(ctx.inputs[0]!)))];

/** matmul with numpy semantics: vectors become matrices, batch dims line up behind the client axis. */
const matmul: BatchRule = (ctx) => {
  const [a, b] = ctx.inputs as [Tracer, Tracer];
  if (!anyBatched(ctx)) return [prim("matmul", [a, b])];
  // Intermediate values are not in ctx's batched set: carry each operand's flag along.
  const [aBatched, bBatched] = [ctx.isBatched(a), ctx.isBatched(b)];
  const asMatrix = (t: Tracer, vectorAxis: number) =>
    memberRank(ctx, t) === 1 ? prim("expand_dims", [t], { axis: vectorAxis }) : t;
  const am = asMatrix(a, -2);
  const bm = asMatrix(b, -1);
  const rankOf = (t: Tracer, batched: boolean) => t.shape.length - (batched ? 1 : 0);
  const matrixRank = Math.max(rankOf(am, aBatched), rankOf(bm, bBatched));
  const out = prim("matmul", [liftMember(ctx, am, matrixRank, aBatched), liftMember(ctx, bm, matrixRank, bBatched)]);
  return [reshapeTo(out, outShape(ctx, true))];
};

/** Sums x down to `target` (the transpose of broadcasting), keeping a batched client axis. */
function sumTo(x: Tracer, target: readonly number[], batched: boolean): Tracer {
  const shape = dims(x.shape);
  const offset = batched ? 1 : 0;
  const lead = shape.length - target.length;
  const axes: number[] = [];
  for (let i = offset; i < shape.length; i++) {
    const inTarget = i - lead;
    if (inTarget < offset || (target[inTarget] === 1 && shape[i] !== 1)) axes.push(i);
  }
  const summed = axes.length === 0 ? x : prim("reduce_sum", [x], { axes, keepDims: true });
  return reshapeTo(summed, target);
}

const broadcastLike: BatchRule = (ctx) => {
  const x = ctx.inputs[0]!;
  const batched = ctx.isBatched(x);
  const target = outShape(ctx, batched);
  const axes = ctx.node.attrs.axes as number[] | undefined;
  let lifted = x;
  if (axes !== undefined) {
    // Unit dims at the reduced axes, then numpy broadcasting does the rest.
    const memberTarget = dims(ctx.outTypes[0]!.shape);
    const sorted = axes.map((a) => (a < 0 ? a + memberTarget.length : a)).sort((p, q) => p - q);
    const member = dims(x.shape).slice(batched ? 1 : 0);
    const withUnits: number[] = [];
    let next = 0;
    for (let i = 0; i < memberTarget.length; i++) withUnits.push(sorted.includes(i) ? 1 : member[next++]!);
    lifted = reshapeTo(x, [...(batched ? [ctx.clients] : []), ...withUnits]);
  } else if (batched) {
    lifted = liftMember(ctx, x, target.length - 1);
  }
  return [sameShape(lifted.shape, target) ? lifted : prim("broadcast_to", [lifted], { shape: target })];
};

const unbroadcast: BatchRule = (ctx) => {
  const x = ctx.inputs[0]!;
  const batched = ctx.isBatched(x);
  const axes = ctx.node.attrs.axes as number[] | undefined;
  let reduced = x;
  if (axes !== undefined) {
    const rank = memberRank(ctx, x);
    reduced = prim("reduce_sum", [x], { axes: axes.map((a) => shiftAxis(a, rank, batched)), keepDims: false });
  }
  return [sumTo(reduced, outShape(ctx, batched), batched)];
};

/** One client's member of a batched value: [C, ...m] to m. */
function memberOf(t: Tracer, client: number): Tracer {
  const shape = dims(t.shape);
  const one = prim("slice", [t], { begin: shape.map((_, i) => (i === 0 ? client : 0)), size: shape.map((d, i) => (i === 0 ? 1 : d)) });
  return reshapeTo(one, shape.slice(1));
}

/** The op on each client's members separately, restacked: for operand pairs no single kernel batches. */
const perClient: BatchRule = (ctx) => {
  const results = Array.from({ length: ctx.clients }, (_, c) =>
    prim(ctx.node.op, ctx.inputs.map((t) => (ctx.isBatched(t) ? memberOf(t, c) : t)), ctx.node.attrs),
  );
  return [prim("concat", results.map((r) => prim("expand_dims", [r], { axis: 0 })), { axis: 0 })];
};

/**
 * Convolution and pooling (NHWC): with one filter for all clients, the client axis folds into
 * the image axis N and one kernel serves every client; otherwise each client runs its own.
 * `imageInputs` marks the operands that carry the N axis.
 */
function foldIntoImages(imageInputs: readonly boolean[]): BatchRule {
  return (ctx) => {
    if (!anyBatched(ctx)) return [prim(ctx.node.op, ctx.inputs, ctx.node.attrs)];
    if (ctx.inputs.some((t, i) => ctx.isBatched(t) && !imageInputs[i])) return perClient(ctx);
    const folded = ctx.inputs.map((t, i) => {
      if (!imageInputs[i]) return t;
      const full = materializeIn(ctx, t);
      const shape = dims(full.shape);
      return reshapeTo(full, [shape[0]! * shape[1]!, ...shape.slice(2)]);
    });
    return [reshapeTo(prim(ctx.node.op, folded, ctx.node.attrs), outShape(ctx, true))];
  };
}

export const batchRules: Record<string, BatchRule> = {
  ...Object.fromEntries(
    [
      "neg", "abs", "sign", "relu", "exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos", "log1p", "floor", "round", "logical_not", "cast", "stop_gradient",
      "add", "sub", "mul", "maximum", "minimum", "div", "pow", "mod", "less", "less_equal", "greater", "greater_equal",
      "equal", "not_equal", "logical_and", "logical_or", "where", "one_hot",
    ].map((op) => [op, elementwise]),
  ),
  constant: (ctx) => [prim("constant", [], ctx.node.attrs)],
  fill: (ctx) => [prim("fill", [], ctx.node.attrs)],
  iota: (ctx) => [prim("iota", [], ctx.node.attrs)],
  client_count: (ctx) => [prim("constant", [], { value: ctx.clients, dtype: "float32", shape: [] })],
  dim_size: (ctx) => {
    const x = ctx.node.inputs.length > 0 ? ctx.inputs[0]! : undefined;
    const member = dims(x!.shape).slice(ctx.isBatched(x!) ? 1 : 0);
    const count = reducedAxes(ctx.node.attrs, member.length).reduce((n, a) => n * member[a]!, 1);
    return [prim("constant", [], { value: count, dtype: "float32", shape: [] })];
  },
  matmul,
  transpose: (ctx) => {
    const x = ctx.inputs[0]!;
    if (!ctx.isBatched(x)) return [prim("transpose", [x], ctx.node.attrs)];
    const rank = memberRank(ctx, x);
    const perm = (ctx.node.attrs.perm as number[] | null) ?? [...Array(rank).keys()].reverse();
    return [prim("transpose", [x], { perm: [0, ...perm.map((p) => p + 1)] })];
  },
  reshape: reshapeToOutput,
  reshape_like: reshapeToOutput,
  expand_dims: reshapeToOutput,
  broadcast_like: broadcastLike,
  broadcast_to: broadcastLike,
  unbroadcast,
  reduce_sum: withAxes(shiftAxes),
  reduce_mean: withAxes(shiftAxes),
  reduce_max: withAxes(shiftAxes),
  reduce_min: withAxes(shiftAxes),
  argmax: withAxes(shiftAxisAttr),
  softmax: withAxes(shiftAxisAttr),
  log_softmax: withAxes(shiftAxisAttr),
  cumsum: withAxes(shiftAxisAttr),
  take: batchTake,
  sort: (ctx) => {
    const x = ctx.inputs[0]!;
    return primOutputs("sort", [x], ctx.isBatched(x) ? shiftAxisAttr(ctx.node.attrs, memberRank(ctx, x)) : ctx.node.attrs);
  },
  take_along: alongLanes,
  take_along_grad: alongLanes,
  take_grad: (ctx) => {
    const [ct, indices, like] = ctx.inputs as [Tracer, Tracer, Tracer];
    if (!anyBatched(ctx)) return [prim("take_grad", ctx.inputs, ctx.node.attrs)];
    // Shared indices: the client axis is one more outer axis. Otherwise each client scatters its own.
    if (ctx.isBatched(ct) && !ctx.isBatched(indices)) {
      return [prim("take_grad", [ct, indices, materializeIn(ctx, like)], shiftAxisAttr(ctx.node.attrs, memberRank(ctx, like)))];
    }
    return perClient(ctx);
  },
  concat: (ctx) => {
    if (!anyBatched(ctx)) return [prim("concat", ctx.inputs, ctx.node.attrs)];
    const rank = dims(ctx.outTypes[0]!.shape).length;
    return [prim("concat", ctx.inputs.map((t) => materializeIn(ctx, t)), shiftAxisAttr(ctx.node.attrs, rank))];
  },
  slice: (ctx) => {
    const x = ctx.inputs[0]!;
    if (!ctx.isBatched(x)) return [prim("slice", [x], ctx.node.attrs)];
    const { begin, size } = ctx.node.attrs as { begin: number[]; size: number[] };
    return [prim("slice", [x], { begin: [0, ...begin], size: [-1, ...size] })];
  },
  pad: (ctx) => {
    const x = ctx.inputs[0]!;
    if (!ctx.isBatched(x)) return [prim("pad", [x], ctx.node.attrs)];
    const { before, after } = ctx.node.attrs as { before: number[]; after: number[] };
    return [prim("pad", [x], { before: [0, ...before], after: [0, ...after] })];
  },
  conv2d: foldIntoImages([true, false]),
  conv2d_grad_input: foldIntoImages([true, false, true]),
  conv2d_grad_filter: perClientUnlessShared,
  max_pool: foldIntoImages([true]),
  max_pool_grad: foldIntoImages([true, true]),
  max_pool_pick: foldIntoImages([true, true]),
  federated_broadcast: (ctx) => [ctx.inputs[0]!],
  federated_sum: (ctx) => {
    const x = ctx.inputs[0]!;
    if (ctx.isBatched(x)) return [prim("reduce_sum", [x], { axes: [0], keepDims: false })];
    return [prim("mul", [x, prim("constant", [], { value: ctx.clients, dtype: x.dtype, shape: [] })])];
  },
  federated_mean: reduceClients("reduce_mean"),
  federated_max: reduceClients("reduce_max"),
  federated_min: reduceClients("reduce_min"),
  // Random numbers: a batch of keys is a key with a leading dim; each client's index is iota(C).
  threefry2x32: elementwise,
  random_bits: elementwise,
  uniform_from_bits: elementwise,
  normal_from_bits: elementwise,
  client_iota: (ctx) => [prim("iota", [], { length: ctx.clients })],
  // The backends lower the secure sum of a [C, ...S] tensor (an all-equal value is every client's).
  secure_sum: (ctx) => [prim("secure_sum_clients", [materializeIn(ctx, ctx.inputs[0]!), ctx.inputs[1]!], ctx.node.attrs)],
  ...robustBatchRules,
};

/**
 * take: a batched table gathers with the axis one further right; batched indices give the
 * client axis where the indices go, moved to the front; both batched, each client looks up
 * its own rows.
 */
function batchTake(ctx: BatchContext): Tracer[] {
  const [x, indices] = ctx.inputs as [Tracer, Tracer];
  const rank = memberRank(ctx, x);
  if (!anyBatched(ctx)) return [prim("take", [x, indices], ctx.node.attrs)];
  if (!ctx.isBatched(indices)) return [prim("take", [x, indices], shiftAxisAttr(ctx.node.attrs, rank))];
  if (ctx.isBatched(x)) return perClient(ctx);
  const axis = shiftAxis(ctx.node.attrs.axis as number, rank, false);
  const taken = prim("take", [x, indices], ctx.node.attrs);
  if (axis === 0) return [taken];
  const order = [...Array(taken.shape.length).keys()].filter((d) => d !== axis);
  return [prim("transpose", [taken], { perm: [axis, ...order] })];
}

/** Lookups along lanes (per-lane indices): every operand gets the client axis, the axis moves one right. */
function alongLanes(ctx: BatchContext): Tracer[] {
  if (!anyBatched(ctx)) return [prim(ctx.node.op, ctx.inputs, ctx.node.attrs)];
  const rank = memberRank(ctx, ctx.inputs[0]!);
  return [prim(ctx.node.op, ctx.inputs.map((t) => materializeIn(ctx, t)), shiftAxisAttr(ctx.node.attrs, rank))];
}

/** A filter gradient sums over a client's images, so batched operands need one kernel per client. */
function perClientUnlessShared(ctx: BatchContext): Tracer[] {
  return anyBatched(ctx) ? perClient(ctx) : [prim(ctx.node.op, ctx.inputs, ctx.node.attrs)];
}

/** A reduction over the clients: over axis 0 when batched; an all-equal value is its own mean, max and min. */
function reduceClients(op: string): BatchRule {
  return (ctx) => {
    const x = ctx.inputs[0]!;
    return [ctx.isBatched(x) ? prim(op, [x], { axes: [0], keepDims: false }) : x];
  };
}
