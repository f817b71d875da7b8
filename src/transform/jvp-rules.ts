/**
 * Forward-mode rules, one per primitive: given a node's primal inputs and outputs and the
 * tangents of its inputs (undefined for zero), emit the tangents of its outputs. Linear
 * primitives apply themselves to the tangents; the others multiply by their local derivative.
 * The control primitives (map, scan, aggregate) are differentiated in jvp.ts.
 */
import { currentGraph, type Tracer } from "../front/trace.js";
import { declassifies, tangentOfRelease } from "../ir/privacy.js";
import type { Node } from "../ir/types.js";
import { add, div, fillLike, mul, neg, prim, reducedAxes, scalar, sub } from "./emit.js";

export interface JvpContext {
  readonly node: Node;
  readonly inputs: readonly Tracer[];
  readonly outputs: readonly Tracer[];
}

/** Output tangents from input tangents (undefined = zero). */
export type JvpRule = (ctx: JvpContext, tangents: readonly (Tracer | undefined)[]) => (Tracer | undefined)[];

const x0 = (c: JvpContext) => c.inputs[0]!;
const x1 = (c: JvpContext) => c.inputs[1]!;
const y0 = (c: JvpContext) => c.outputs[0]!;

/** A tangent of the output's shape, from a tangent that may broadcast (numpy rules). */
const asOutput = (t: Tracer, c: JvpContext) => (t.shape.length === y0(c).shape.length && t.shape.every((d, i) => d === y0(c).shape[i]) ? t : prim("broadcast_like", [t, y0(c)]));

/** One output, the sum of the given terms of the tangents that are present. */
function sumOf(c: JvpContext, terms: (Tracer | undefined)[]): (Tracer | undefined)[] {
  const present = terms.filter((t): t is Tracer => t !== undefined).map((t) => asOutput(t, c));
  if (present.length === 0) return [undefined];
  return [present.slice(1).reduce((acc, t) => add(acc, t), present[0]!)];
}

/** The same primitive (with its attributes) applied to the tangent: for linear primitives of one operand. */
const linear: JvpRule = (c, [t]) => [t === undefined ? undefined : prim(c.node.op, [t, ...c.inputs.slice(1)], c.node.attrs)];
/** y = f(x) elementwise: dy = f'(x) dx, with f' from the primal input and output. */
const chain =
  (derivative: (c: JvpContext) => Tracer): JvpRule =>
  (c, [t]) =>
    [t === undefined ? undefined : mul(t, derivative(c))];
const constantOutput: JvpRule = (c) => c.outputs.map(() => undefined);
/** The node's own window op on new leading operands, keeping the rest (the shape donor) and its attributes. */
const windowOp = (c: JvpContext, leading: readonly Tracer[]) => prim(c.node.op, [...leading, ...c.inputs.slice(leading.length)], c.node.attrs);

export const jvpRules: Record<string, JvpRule> = {
  add: (c, [ta, tb]) => sumOf(c, [ta, tb]),
  sub: (c, [ta, tb]) => sumOf(c, [ta, tb === undefined ? undefined : neg(tb)]),
  mul: (c, [ta, tb]) => sumOf(c, [ta && mul(ta, x1(c)), tb && mul(x0(c), tb)]),
  div: (c, [ta, tb]) => sumOf(c, [ta && div(ta, x1(c)), tb && neg(mul(tb, div(y0(c), x1(c))))]),
  pow: (c, [ta, tb]) =>
    sumOf(c, [
      ta && mul(ta, mul(x1(c), prim("pow", [x0(c), sub(x1(c), scalar(1, x1(c)))]))),
      tb && mul(tb, mul(y0(c), prim("log", [x0(c)]))),
    ]),
  maximum: (c, [ta, tb]) => {
    const first = prim("greater_equal", [x0(c), x1(c)]);
    return [prim("where", [first, asOutput(ta ?? fillLike(0, x0(c)), c), asOutput(tb ?? fillLike(0, x1(c)), c)])];
  },
  minimum: (c, [ta, tb]) => {
    const first = prim("less_equal", [x0(c), x1(c)]);
    return [prim("where", [first, asOutput(ta ?? fillLike(0, x0(c)), c), asOutput(tb ?? fillLike(0, x1(c)), c)])];
  },
  where: (c, [, ta, tb]) => {
    if (ta === undefined && tb === undefined) return [undefined];
    return [prim("where", [x0(c), asOutput(ta ?? fillLike(0, x1(c)), c), asOutput(tb ?? fillLike(0, c.inputs[2]!), c)])];
  },
  neg: linear,
  cumsum: linear,
  take: linear,
  take_grad: linear,
  take_along: linear,
  take_along_grad: linear,
  // The sorted values are x's entries in another order: so is their tangent. Positions are integers.
  sort: (c, [t]) => [t === undefined ? undefined : prim("take_along", [t, c.outputs[1]!], { axis: c.node.attrs.axis! }), undefined],
  abs: chain((c) => prim("sign", [x0(c)])),
  relu: chain((c) => prim("cast", [prim("greater", [x0(c), scalar(0, x0(c))])], { dtype: "float32" })),
  exp: chain((c) => y0(c)),
  log: (c, [t]) => [t === undefined ? undefined : div(t, x0(c))],
  sqrt: (c, [t]) => [t === undefined ? undefined : div(t, mul(scalar(2, y0(c)), y0(c)))],
  sigmoid: chain((c) => mul(y0(c), sub(scalar(1, y0(c)), y0(c)))),
  tanh: chain((c) => sub(scalar(1, y0(c)), mul(y0(c), y0(c)))),
  sin: chain((c) => prim("cos", [x0(c)])),
  cos: chain((c) => neg(prim("sin", [x0(c)]))),
  log1p: (c, [t]) => [t === undefined ? undefined : div(t, add(x0(c), scalar(1, x0(c))))],
  // a mod b = a - b floor(a / b) between its jumps: d/da = 1, d/db = -floor(a / b), as in JAX (int32: no tangents).
  mod: (c, [ta, tb]) => (y0(c).dtype !== "float32" ? [undefined] : sumOf(c, [ta, tb && neg(mul(tb, prim("floor", [div(x0(c), x1(c))])))])),
  cast: (c, [t]) => [t !== undefined && c.node.attrs.dtype === "float32" ? prim("cast", [t], c.node.attrs) : undefined],
  ...Object.fromEntries(
    ["sign", "floor", "round", "stop_gradient", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_not", "argmax", "one_hot", "constant", "fill", "iota", "dim_size", "client_count",
      // Random draws are constants of the program: gradients do not flow into keys.
      "threefry2x32", "random_bits", "uniform_from_bits", "normal_from_bits", "client_iota",
      // The robust aggregators' selections are piecewise constant (src/ir/robust-primitives.ts).
      "federated_trim_mask", "federated_krum_mask"].map(
      (op) => [op, constantOutput],
    ),
  ),

  matmul: (c, [ta, tb]) => sumOf(c, [ta && prim("matmul", [ta, x1(c)]), tb && prim("matmul", [x0(c), tb])]),
  transpose: linear,
  reshape: linear,
  reshape_like: linear,
  expand_dims: linear,
  broadcast_like: linear,
  broadcast_to: linear,
  unbroadcast: linear,
  slice: linear,
  pad: linear,
  reduce_sum: linear,
  reduce_mean: linear,
  concat: (c, tangents) => {
    if (tangents.every((t) => t === undefined)) return [undefined];
    return [prim("concat", tangents.map((t, i) => t ?? fillLike(0, c.inputs[i]!)), c.node.attrs)];
  },
  reduce_max: extremum,
  reduce_min: extremum,
  softmax: (c, [t]) => {
    if (t === undefined) return [undefined];
    const axis = c.node.attrs.axis as number;
    const weighted = prim("reduce_sum", [mul(t, y0(c))], { axes: [axis], keepDims: true });
    return [mul(y0(c), sub(t, weighted))];
  },
  log_softmax: (c, [t]) => {
    if (t === undefined) return [undefined];
    const axis = c.node.attrs.axis as number;
    return [sub(t, prim("reduce_sum", [mul(prim("exp", [y0(c)]), t)], { axes: [axis], keepDims: true }))];
  },
  conv2d: (c, [tx, tf]) => sumOf(c, [tx && prim("conv2d", [tx, x1(c)], c.node.attrs), tf && prim("conv2d", [x0(c), tf], c.node.attrs)]),
  // Bilinear in their first two operands; the third only lends its shape.
  conv2d_grad_input: (c, [tdy, tf]) => sumOf(c, [tdy && windowOp(c, [tdy, x1(c)]), tf && windowOp(c, [x0(c), tf])]),
  conv2d_grad_filter: (c, [tx, tdy]) => sumOf(c, [tx && windowOp(c, [tx, x1(c)]), tdy && windowOp(c, [x0(c), tdy])]),
  // Where each window's maximum is does not move under a small change of x: the tangent is
  // t at the maxima, and the pooling gradients are linear in their second operand.
  max_pool: (c, [t]) => [t && prim("max_pool_pick", [x0(c), t], c.node.attrs)],
  max_pool_grad: (c, [, t]) => [t && windowOp(c, [x0(c), t])],
  max_pool_pick: (c, [, t]) => [t && windowOp(c, [x0(c), t])],

  federated_broadcast: linear,
  federated_sum: (c, tangents) => (declassifies(c.node.op, c.node.attrs) ? releaseTangent(tangents) : linear(c, tangents)),
  // Straight through the quantization: the tangent of a sum is the sum of the tangents.
  secure_sum: (_c, tangents) => releaseTangent(tangents),
  federated_mean: linear,
  federated_max: federatedExtremum,
  federated_min: federatedExtremum,
};

/**
 * The tangent of a releasing aggregator (dpSum's sum, secureSum): the plain sum of the
 * tangents, without the aggregator's mark. It is not protected by the mechanism (no noise is
 * added to it, no mask hides it), so a tangent computed from private data stays private and
 * reaching the SERVER is FT109 (src/ir/privacy.ts).
 */
function releaseTangent([t]: readonly (Tracer | undefined)[]): (Tracer | undefined)[] {
  return [t && currentGraph(tangentOfRelease).emit("federated_sum", [t], {}, tangentOfRelease)[0]!];
}

/** max/min over axes: the tangent where the extremum is attained, averaged over ties (the transpose of vjp's rule). */
function extremum(c: JvpContext, [t]: readonly (Tracer | undefined)[]): (Tracer | undefined)[] {
  if (t === undefined) return [undefined];
  const x = x0(c);
  const axes = reducedAxes(c.node.attrs, x.shape.length);
  const spread = (v: Tracer) => (c.node.attrs.keepDims === true ? prim("broadcast_like", [v, x]) : prim("broadcast_like", [v, x], { axes }));
  const hits = prim("cast", [prim("equal", [x, spread(y0(c))])], { dtype: "float32" });
  const reduce = (v: Tracer) => prim("reduce_sum", [v], { axes, keepDims: c.node.attrs.keepDims === true });
  return [div(reduce(mul(hits, t)), reduce(hits))];
}

/** reduceMax/reduceMin over clients: likewise, among the clients that attain it. */
function federatedExtremum(c: JvpContext, [t]: readonly (Tracer | undefined)[]): (Tracer | undefined)[] {
  if (t === undefined) return [undefined];
  const hits = prim("cast", [prim("equal", [x0(c), prim("federated_broadcast", [y0(c)])])], { dtype: "float32" });
  return [div(prim("federated_sum", [mul(hits, t)]), prim("federated_sum", [hits]))];
}
