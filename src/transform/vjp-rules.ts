/**
 * Reverse-mode rules, one per primitive: given the primal inputs and outputs of a node and
 * the cotangents of its outputs, emit the cotangents of its inputs (undefined for inputs that
 * get none). Rules only compute cotangents for active inputs (`ctx.active`).
 *
 * The federated rules are SPEC section 5: the cotangent of broadcast is a sum over clients, of
 * reduceSum a broadcast, of reduceMean a broadcast divided by the number of clients.
 */
import { ftError } from "../errors/error.js";
import type { Attrs } from "../ir/primitives.js";
import type { Node, ValueType } from "../ir/types.js";
import type { Tracer } from "../front/trace.js";
import { broadcastLike, div, fillLike, mul, neg, prim, reducedAxes, scalar, sub, unbroadcast } from "./emit.js";
import { vjpAggregate, vjpMap, vjpScan } from "./vjp-control.js";
import type { VjpContext, VjpRule } from "./vjp-types.js";

/** Computes each active input's cotangent with the matching function. */
const each =
  (...perInput: ((ctx: VjpContext, ct: Tracer) => Tracer)[]): VjpRule =>
  (ctx, [ct]) =>
    perInput.map((f, i) => (ctx.active[i] ? f(ctx, ct!) : undefined));

const x0 = (ctx: VjpContext) => ctx.inputs[0]!;
const x1 = (ctx: VjpContext) => ctx.inputs[1]!;
const y0 = (ctx: VjpContext) => ctx.outputs[0]!;
const attrs = (ctx: VjpContext): Attrs => ctx.node.attrs;

/** Piecewise-constant or integer-valued: no cotangent flows back. */
const noGradient: VjpRule = (ctx) => ctx.inputs.map(() => undefined);

const where = (cond: Tracer, a: Tracer, b: Tracer) => prim("where", [cond, a, b]);
const cast = (x: Tracer, dtype: string) => prim("cast", [x], { dtype });
const reduceSum = (x: Tracer, axes: number[] | null, keepDims: boolean) => prim("reduce_sum", [x], { axes, keepDims });

function transposeLast2(x: Tracer): Tracer {
  const rank = x.shape.length;
  const perm = [...Array(rank).keys()];
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1]!, perm[rank - 2]!];
  return prim("transpose", [x], { perm });
}

/** matmul's cotangents under numpy semantics (rank-1 operands are vectors, batch dims broadcast). */
const matmulRule: VjpRule = (ctx, [ct]) => {
  const [a, b] = ctx.inputs as [Tracer, Tracer];
  const [ra, rb] = [a.shape.length, b.shape.length];
  if (ra === 1 && rb === 1) return [ctx.active[0] ? mul(ct!, b) : undefined, ctx.active[1] ? mul(ct!, a) : undefined];
  // Lift vectors to matrices, as numpy does, and the cotangent with them.
  const a2 = ra === 1 ? prim("expand_dims", [a], { axis: 0 }) : a;
  const b2 = rb === 1 ? prim("expand_dims", [b], { axis: 1 }) : b;
  const ct2 = ra === 1 ? prim("expand_dims", [ct!], { axis: -2 }) : rb === 1 ? prim("expand_dims", [ct!], { axis: -1 }) : ct!;
  const squeezeFor = (full: Tracer, lifted: number | undefined) =>
    lifted === undefined ? full : reduceSum(full, [lifted], false);
  return [
    ctx.active[0] ? unbroadcast(squeezeFor(prim("matmul", [ct2, transposeLast2(b2)]), ra === 1 ? -2 : undefined), a) : undefined,
    ctx.active[1] ? unbroadcast(squeezeFor(prim("matmul", [transposeLast2(a2), ct2]), rb === 1 ? -1 : undefined), b) : undefined,
  ];
};

/** Cotangent of a reduction's input, broadcast back over the reduced axes. */
function spread(ctx: VjpContext, ct: Tracer): Tracer {
  return attrs(ctx).keepDims === true ? broadcastLike(ct, x0(ctx)) : broadcastLike(ct, x0(ctx), reducedAxes(attrs(ctx), x0(ctx).shape.length));
}

/** max/min reductions: the cotangent is shared equally among the elements that attain the extremum (as TensorFlow). */
const extremumRule: VjpRule = (ctx, [ct]) => {
  if (!ctx.active[0]) return [undefined];
  const x = x0(ctx);
  const hits = cast(prim("equal", [x, spread(ctx, y0(ctx))]), "float32");
  const axes = reducedAxes(attrs(ctx), x.shape.length);
  const counts = broadcastLike(reduceSum(hits, axes, true), x);
  return [div(mul(hits, spread(ctx, ct!)), counts)];
};

/** federated_max/min: the same sharing among the clients that attain it. */
const federatedExtremumRule: VjpRule = (ctx, [ct]) => {
  if (!ctx.active[0]) return [undefined];
  const x = x0(ctx);
  const hits = cast(prim("equal", [x, prim("federated_broadcast", [y0(ctx)])]), "float32");
  const counts = prim("federated_broadcast", [prim("federated_sum", [hits])]);
  return [div(mul(hits, prim("federated_broadcast", [ct!])), counts)];
};

function inversePermutation(perm: readonly number[]): number[] {
  const inverse: number[] = [];
  perm.forEach((p, i) => (inverse[p] = i));
  return inverse;
}

function numericDims(x: Tracer, what: string): number[] {
  return x.shape.map((d) => (typeof d === "number" ? d : unknownDim(x, what)));
}

function unknownDim(x: Tracer, what: string): never {
  throw new Error(`internal: the gradient of ${what} needs known dims, got ${x.toString()}`);
}

/**
 * What lies after a block of `whole` starting at `begin` and shaped as `part`: the padding
 * that puts the block's cotangent back in place. An axis of unknown size (a symbolic batch
 * dim) has a margin only when the block takes all of it (the LSTM's gates are slices of
 * [B, 4H] along the known axis), where the margin is 0.
 */
function marginsAfter(whole: Tracer, part: Tracer, begin: readonly number[], what: string): number[] {
  return whole.shape.map((d, i) => {
    const size = part.shape[i];
    if (typeof d === "number" && typeof size === "number") return d - begin[i]! - size;
    if (d === size && begin[i] === 0) return 0;
    return unknownDim(whole, what);
  });
}

export const vjpRules: Record<string, VjpRule> = {
  add: each((c, ct) => unbroadcast(ct, x0(c)), (c, ct) => unbroadcast(ct, x1(c))),
  sub: each((c, ct) => unbroadcast(ct, x0(c)), (c, ct) => unbroadcast(neg(ct), x1(c))),
  mul: each((c, ct) => unbroadcast(mul(ct, x1(c)), x0(c)), (c, ct) => unbroadcast(mul(ct, x0(c)), x1(c))),
  div: each(
    (c, ct) => unbroadcast(div(ct, x1(c)), x0(c)),
    (c, ct) => unbroadcast(neg(mul(ct, div(y0(c), x1(c)))), x1(c)),
  ),
  pow: each(
    (c, ct) => unbroadcast(mul(ct, mul(x1(c), prim("pow", [x0(c), sub(x1(c), scalar(1, x1(c)))]))), x0(c)),
    (c, ct) => unbroadcast(mul(ct, mul(y0(c), prim("log", [x0(c)]))), x1(c)),
  ),
  maximum: each(
    (c, ct) => unbroadcast(where(prim("greater_equal", [x0(c), x1(c)]), ct, fillLike(0, ct)), x0(c)),
    (c, ct) => unbroadcast(where(prim("greater_equal", [x0(c), x1(c)]), fillLike(0, ct), ct), x1(c)),
  ),
  minimum: each(
    (c, ct) => unbroadcast(where(prim("less_equal", [x0(c), x1(c)]), ct, fillLike(0, ct)), x0(c)),
    (c, ct) => unbroadcast(where(prim("less_equal", [x0(c), x1(c)]), fillLike(0, ct), ct), x1(c)),
  ),
  neg: each((_c, ct) => neg(ct)),
  abs: each((c, ct) => mul(ct, prim("sign", [x0(c)]))),
  relu: each((c, ct) => where(prim("greater", [x0(c), scalar(0, x0(c))]), ct, fillLike(0, ct))),
  exp: each((c, ct) => mul(ct, y0(c))),
  log: each((c, ct) => div(ct, x0(c))),
  sqrt: each((c, ct) => div(ct, mul(scalar(2, ct), y0(c)))),
  sigmoid: each((c, ct) => mul(ct, mul(y0(c), sub(scalar(1, ct), y0(c))))),
  tanh: each((c, ct) => mul(ct, sub(scalar(1, ct), mul(y0(c), y0(c))))),
  sin: each((c, ct) => mul(ct, prim("cos", [x0(c)]))),
  cos: each((c, ct) => neg(mul(ct, prim("sin", [x0(c)])))),
  log1p: each((c, ct) => div(ct, prim("add", [x0(c), scalar(1, x0(c))]))),
  // Piecewise constant: zero almost everywhere, as JAX defines them (undefined at the jumps).
  floor: noGradient,
  round: noGradient,
  // Between its jumps a mod b = a - b floor(a / b): d/da = 1, d/db = -floor(a / b), as JAX's jnp.mod.
  mod: (ctx, [ct]) =>
    y0(ctx).dtype !== "float32"
      ? [undefined, undefined]
      : [
          ctx.active[0] ? unbroadcast(ct!, x0(ctx)) : undefined,
          ctx.active[1] ? unbroadcast(neg(mul(ct!, prim("floor", [div(x0(ctx), x1(ctx))]))), x1(ctx)) : undefined,
        ],
  where: (ctx, [ct]) => {
    const [cond, a, b] = ctx.inputs as [Tracer, Tracer, Tracer];
    const zero = fillLike(0, ct!);
    return [undefined, ctx.active[1] ? unbroadcast(where(cond, ct!, zero), a) : undefined, ctx.active[2] ? unbroadcast(where(cond, zero, ct!), b) : undefined];
  },
  // A cast from int32 or bool gets no cotangent: vjp() drops cotangents of non-float values.
  cast: each((_c, ct) => ct),
  sign: noGradient,
  stop_gradient: noGradient,
  less: noGradient,
  less_equal: noGradient,
  greater: noGradient,
  greater_equal: noGradient,
  equal: noGradient,
  not_equal: noGradient,
  logical_and: noGradient,
  logical_or: noGradient,
  logical_not: noGradient,
  argmax: noGradient,
  one_hot: noGradient,
  constant: noGradient,
  fill: noGradient,
  iota: noGradient,
  dim_size: noGradient,
  client_count: noGradient,
  // Random draws are constants of the program: gradients do not flow into keys.
  threefry2x32: noGradient,
  random_bits: noGradient,
  uniform_from_bits: noGradient,
  normal_from_bits: noGradient,
  client_iota: noGradient,
  // The robust aggregators' selections are piecewise constant (src/ir/robust-primitives.ts).
  federated_trim_mask: noGradient,
  federated_krum_mask: noGradient,

  matmul: matmulRule,
  transpose: each((c, ct) => {
    const perm = attrs(c).perm as number[] | null;
    return prim("transpose", [ct], { perm: perm === null ? null : inversePermutation(perm) });
  }),
  reshape: each((c, ct) => prim("reshape_like", [ct, x0(c)])),
  reshape_like: (ctx, [ct]) => [ctx.active[0] ? prim("reshape_like", [ct!, x0(ctx)]) : undefined, undefined],
  expand_dims: each((c, ct) => prim("reshape_like", [ct, x0(c)])),
  broadcast_like: (ctx, [ct]) => [
    ctx.active[0] ? unbroadcast(ct!, x0(ctx), attrs(ctx).axes as number[] | undefined) : undefined,
    undefined,
  ],
  unbroadcast: (ctx, [ct]) => [
    ctx.active[0] ? broadcastLike(ct!, x0(ctx), attrs(ctx).axes as number[] | undefined) : undefined,
    undefined,
  ],
  concat: (ctx, [ct]) => {
    const rank = x0(ctx).shape.length;
    const axis = ((attrs(ctx).axis as number) + rank) % rank;
    let offset = 0;
    return ctx.inputs.map((x, i) => {
      const dims = numericDims(x, "concat");
      const begin = dims.map((_, d) => (d === axis ? offset : 0));
      offset += dims[axis]!;
      return ctx.active[i] ? prim("slice", [ct!], { begin, size: dims }) : undefined;
    });
  },
  slice: each((c, ct) => {
    const begin = attrs(c).begin as number[];
    return prim("pad", [ct], { before: begin, after: marginsAfter(x0(c), y0(c), begin, "slice") });
  }),
  pad: each((c, ct) => {
    const before = attrs(c).before as number[];
    const after = attrs(c).after as number[];
    // An unknown dim can only be padded by nothing (see marginsAfter): take all of it.
    const size = x0(c).shape.map((d, i) => (typeof d === "number" ? d : after[i] === 0 ? -1 : unknownDim(x0(c), "pad")));
    return prim("slice", [ct], { begin: before, size });
  }),

  reduce_sum: each((c, ct) => spread(c, ct)),
  reduce_mean: each((c, ct) => div(spread(c, ct), prim("dim_size", [x0(c)], { axes: attrs(c).axes ?? null }))),
  reduce_max: extremumRule,
  reduce_min: extremumRule,
  softmax: each((c, ct) => {
    const axis = attrs(c).axis as number;
    const dot = reduceSum(mul(ct, y0(c)), [axis], true);
    return mul(y0(c), sub(ct, dot));
  }),
  // Entry i of a running sum collects entries on one side of i: its transpose collects from the other.
  cumsum: each((c, ct) => prim("cumsum", [ct], { ...attrs(c), reverse: attrs(c).reverse !== true })),
  take: (ctx, [ct]) => [ctx.active[0] ? prim("take_grad", [ct!, x1(ctx), x0(ctx)], attrs(ctx)) : undefined, undefined],
  take_grad: (ctx, [ct]) => [ctx.active[0] ? prim("take", [ct!, x1(ctx)], attrs(ctx)) : undefined, undefined, undefined],
  take_along: (ctx, [ct]) => [ctx.active[0] ? prim("take_along_grad", [ct!, x1(ctx), x0(ctx)], attrs(ctx)) : undefined, undefined],
  take_along_grad: (ctx, [ct]) => [ctx.active[0] ? prim("take_along", [ct!, x1(ctx)], attrs(ctx)) : undefined, undefined, undefined],
  // Each sorted value's cotangent goes back to the position it came from.
  sort: (ctx, [ct]) => [ctx.active[0] && ct !== undefined ? prim("take_along_grad", [ct, ctx.outputs[1]!, x0(ctx)], { axis: attrs(ctx).axis! }) : undefined],
  log_softmax: each((c, ct) => {
    const axis = attrs(c).axis as number;
    return sub(ct, mul(prim("exp", [y0(c)]), reduceSum(ct, [axis], true)));
  }),

  conv2d: (ctx, [ct]) => {
    const [x, f] = ctx.inputs as [Tracer, Tracer];
    return [
      ctx.active[0] ? prim("conv2d_grad_input", [ct!, f, x], attrs(ctx)) : undefined,
      ctx.active[1] ? prim("conv2d_grad_filter", [x, ct!, f], attrs(ctx)) : undefined,
    ];
  },
  max_pool: each((c, ct) => prim("max_pool_grad", [x0(c), ct], attrs(c))),

  // The gradients of the window ops, for grad(grad(f)): each is linear in its operands but the
  // last (a value lending its shape), and the pooling ones depend on x only through where
  // each window's maximum is, which is piecewise constant.
  conv2d_grad_input: (ctx, [ct]) => {
    const [dy, f] = ctx.inputs as [Tracer, Tracer];
    return [
      ctx.active[0] ? prim("conv2d", [ct!, f], attrs(ctx)) : undefined,
      ctx.active[1] ? prim("conv2d_grad_filter", [ct!, dy, f], attrs(ctx)) : undefined,
      undefined,
    ];
  },
  conv2d_grad_filter: (ctx, [ct]) => {
    const [x, dy] = ctx.inputs as [Tracer, Tracer];
    return [
      ctx.active[0] ? prim("conv2d_grad_input", [dy, ct!, x], attrs(ctx)) : undefined,
      ctx.active[1] ? prim("conv2d", [x, ct!], attrs(ctx)) : undefined,
      undefined,
    ];
  },
  max_pool_grad: (ctx, [ct]) => [undefined, ctx.active[1] ? prim("max_pool_pick", [x0(ctx), ct!], attrs(ctx)) : undefined],
  max_pool_pick: (ctx, [ct]) => [undefined, ctx.active[1] ? prim("max_pool_grad", [x0(ctx), ct!], attrs(ctx)) : undefined],

  federated_broadcast: each((_c, ct) => prim("federated_sum", [ct])),
  federated_sum: each((_c, ct) => prim("federated_broadcast", [ct])),
  // A sum, straight through the quantization; the key gets no cotangent.
  secure_sum: (ctx, [ct]) => [ctx.active[0] ? prim("federated_broadcast", [ct!]) : undefined, undefined],
  federated_mean: each((_c, ct) => div(prim("federated_broadcast", [ct]), prim("client_count", []))),
  federated_max: federatedExtremumRule,
  federated_min: federatedExtremumRule,

  map: vjpMap,
  scan: vjpScan,
  aggregate: vjpAggregate,
  aggregate_vjp: () => {
    throw ftError("FT211", { op: "grad", what: "aggregate() twice: the gradient of aggregate has no gradient of its own" });
  },
};
