/**
 * The IR's primitives and their typing rules: one table, keyed by primitive name.
 *
 * `infer` computes a node's output types from its input types and attributes, applying the
 * placement, dtype and shape rules with the user-facing operation name (`op`) so that a
 * failure reads as the user wrote it. The front end calls it while tracing; deserialize()
 * calls it again to validate a loaded program. Control primitives (map, scan, aggregate)
 * also receive their bodies' output types.
 *
 * The other per-primitive tables (gradients, client batching, lowering, the reference
 * interpreter) live with their transformation and are keyed by the same names.
 */
import { ftError } from "../errors/error.js";
import { elementwiseDType, requireDType, requireSameDType, type DTypeClass } from "./dtypes.js";
import { isAtClients, joinPlacement, joinPlacements } from "./placement.js";
import { printShape, printType } from "./print.js";
import { randomPrimitives } from "./random-primitives.js";
import { securePrimitives } from "./secure-primitives.js";
import { robustPrimitives } from "./robust-primitives.js";
import { sequencePrimitives } from "./sequence-primitives.js";
import * as shapes from "./shapes.js";
import type { Attrs, DType, DimValue, Placement, PrimitiveRule, ValueType } from "./types.js";

export type { Attrs, PrimitiveRule } from "./types.js";

const asMember = (t: ValueType): ValueType => ({ ...t, placement: "member" });

const num = (attrs: Attrs, key: string): number => attrs[key] as number;
const nums = (attrs: Attrs, key: string): number[] => attrs[key] as number[];
const optionalAxes = (attrs: Attrs): number[] | undefined => (attrs.axes === null ? undefined : nums(attrs, "axes"));

function unary(cls: DTypeClass): PrimitiveRule {
  return {
    infer: ([x], _attrs, op) => [{ shape: x!.shape, dtype: elementwiseDType(op, cls, x!.dtype), placement: x!.placement }],
  };
}

function binary(cls: DTypeClass): PrimitiveRule {
  return {
    infer: ([a, b], _attrs, op) => {
      const placement = joinPlacement(op, a!, b!);
      const dtype = elementwiseDType(op, cls, a!.dtype, b!.dtype);
      const shape = shapes.broadcastShapes(a!.shape, b!.shape, { op, a: printType(a!), b: printType(b!) });
      return [{ shape, dtype, placement }];
    },
  };
}


function reduction(cls: DTypeClass): PrimitiveRule {
  return {
    infer: ([x], attrs, op) => [
      {
        shape: shapes.reduceShape(x!.shape, optionalAxes(attrs), attrs.keepDims === true, op, printType(x!)),
        dtype: elementwiseDType(op, cls, x!.dtype),
        placement: x!.placement,
      },
    ],
  };
}

/** A placement primitive's check: every input at `from`, result moved to `to`. */
function federated(from: "server" | "clients", to: Placement, cls: DTypeClass = "any"): PrimitiveRule {
  return {
    infer: ([x], _attrs, op) => {
      const ok = from === "server" ? x!.placement === "server" : isAtClients(x!.placement);
      if (!ok) {
        if (x!.placement === "member") throw ftError("FT105", { op });
        if (from === "server") throw ftError("FT101", { got: printType(x!) });
        throw ftError("FT103", { op, got: printType(x!) });
      }
      return [{ ...x!, dtype: elementwiseDType(op, cls, x!.dtype), placement: to }];
    },
  };
}

/** Output placement of per-client results: all-equal when every input was. */
function mapPlacement(inputs: readonly ValueType[]): Placement {
  return inputs.every((t) => t.placement === "clients-equal" || t.placement === "local") ? "clients-equal" : "clients";
}

function windowShape(x: ValueType, window: readonly [number, number], channels: DimValue, attrs: Attrs): DimValue[] {
  const [sh, sw] = nums(attrs, "strides") as [number, number];
  const padding = attrs.padding as "same" | "valid";
  const [n, h, w] = x.shape;
  return [n!, shapes.windowDim(h!, window[0], sh, padding), shapes.windowDim(w!, window[1], sw, padding), channels];
}

function requireRank(op: string, x: ValueType, rank: number): void {
  if (x.shape.length !== rank) throw ftError("FT204", { op, axis: rank - 1, a: printType(x), rank: x.shape.length });
}

export const primitives: Record<string, PrimitiveRule> = {
  // elementwise
  neg: unary("numeric"),
  abs: unary("numeric"),
  sign: unary("numeric"),
  relu: unary("numeric"),
  exp: unary("float"),
  log: unary("float"),
  sqrt: unary("float"),
  sigmoid: unary("float"),
  tanh: unary("float"),
  sin: unary("float"),
  cos: unary("float"),
  log1p: unary("float"),
  floor: unary("float"),
  round: unary("float"),
  logical_not: unary("logical"),
  add: binary("numeric"),
  sub: binary("numeric"),
  mul: binary("numeric"),
  maximum: binary("numeric"),
  minimum: binary("numeric"),
  div: binary("float"),
  pow: binary("float"),
  mod: binary("numeric"),
  less: binary("compare"),
  less_equal: binary("compare"),
  greater: binary("compare"),
  greater_equal: binary("compare"),
  equal: binary("equality"),
  not_equal: binary("equality"),
  logical_and: binary("logical"),
  logical_or: binary("logical"),
  where: {
    infer: ([c, a, b], _attrs, op) => {
      requireDType(op, c!.dtype, "bool");
      const dtype = requireSameDType(op, a!.dtype, b!.dtype);
      const placement = joinPlacements(op, [c!, a!, b!]);
      const ab = shapes.broadcastShapes(a!.shape, b!.shape, { op, a: printType(a!), b: printType(b!) });
      const shape = shapes.broadcastShapes(c!.shape, ab, { op, a: printType(c!), b: printShape(ab) });
      return [{ shape, dtype, placement }];
    },
  },
  cast: { infer: ([x], attrs) => [{ ...x!, dtype: attrs.dtype as DType }] },
  stop_gradient: unary("any"),

  // constants
  constant: {
    infer: (_inputs, attrs) => [{ shape: nums(attrs, "shape"), dtype: attrs.dtype as DType, placement: "local" }],
  },
  fill: {
    infer: (_inputs, attrs) => [
      { shape: attrs.shape as DimValue[], dtype: attrs.dtype as DType, placement: "local" },
    ],
  },
  /** 0, 1, ..., length-1 as i32[length]: the index sequence of fori(). */
  iota: {
    infer: (_inputs, attrs) => [{ shape: [num(attrs, "length")], dtype: "int32", placement: "local" }],
  },
  /** The number of elements over `axes` of x (all when null), as f32[]: the divisor of a mean. */
  dim_size: { infer: () => [{ shape: [], dtype: "float32", placement: "local" }] },
  /** The number of clients in the cohort, as f32[]. */
  client_count: { infer: () => [{ shape: [], dtype: "float32", placement: "local" }] },

  // shapes and linear algebra
  matmul: {
    infer: ([a, b], _attrs, op) => {
      const placement = joinPlacement(op, a!, b!);
      const dtype = elementwiseDType(op, "numeric", a!.dtype, b!.dtype);
      return [{ shape: shapes.matmulShape(a!.shape, b!.shape, { op, a: printType(a!), b: printType(b!) }), dtype, placement }];
    },
  },
  transpose: {
    infer: ([x], attrs, op) => [
      { ...x!, shape: shapes.transposeShape(x!.shape, attrs.perm === null ? undefined : nums(attrs, "perm"), op, printType(x!)) },
    ],
  },
  reshape: {
    infer: ([x], attrs) => [{ ...x!, shape: shapes.reshapeShape(x!.shape, attrs.shape as DimValue[], printType(x!)) }],
  },
  /** x broadcast (numpy rules) to a concrete shape; used once dims are bound (src/transform/batch.ts). */
  broadcast_to: {
    infer: ([x], attrs, op) => [
      { ...x!, shape: shapes.broadcastShapes(x!.shape, nums(attrs, "shape"), { op, a: printType(x!), b: printShape(nums(attrs, "shape")) }) },
    ],
  },
  /** The per-client loop of a batched program: runs its body once per client (see src/lower). */
  client_loop: {
    infer: (_inputs, attrs, _op, bodies) =>
      bodies![0]!.map((t) => ({ ...t, shape: [num(attrs, "clients"), ...t.shape], placement: "local" })),
    bodyParams: (operands, attrs) => [
      operands.map((t, i) => ({ ...t, shape: (attrs.batched as boolean[])[i] ? t.shape.slice(1) : t.shape, placement: "member" })),
    ],
  },
  expand_dims: {
    infer: ([x], attrs, op) => [{ ...x!, shape: shapes.expandDimsShape(x!.shape, num(attrs, "axis"), op, printType(x!)) }],
  },
  /**
   * x broadcast (numpy rules) to the shape of `like`; with attrs.axes, x first gets unit dims
   * at those axes of like (the cotangent of a reduction without keepDims).
   */
  broadcast_like: {
    infer: ([x, like], _attrs, op) => [
      { shape: like!.shape, dtype: x!.dtype, placement: joinPlacement(op, x!, like!) },
    ],
  },
  /** x summed down to the shape of `like` (over attrs.axes first, if given): the transpose of broadcast_like. */
  unbroadcast: {
    infer: ([x, like], _attrs, op) => [
      { shape: like!.shape, dtype: x!.dtype, placement: joinPlacement(op, x!, like!) },
    ],
  },
  /** x reshaped to the shape of `like`. */
  reshape_like: {
    infer: ([x, like], _attrs, op) => [
      { shape: like!.shape, dtype: x!.dtype, placement: joinPlacement(op, x!, like!) },
    ],
  },
  concat: {
    infer: (inputs, attrs, op) => [
      {
        shape: shapes.concatShape(
          inputs.map((t) => t.shape),
          num(attrs, "axis"),
          op,
          printType(inputs[0]!),
        ),
        dtype: inputs.reduce((d, t) => requireSameDType(op, d, t.dtype), inputs[0]!.dtype),
        placement: joinPlacements(op, inputs),
      },
    ],
  },
  slice: {
    infer: ([x], attrs, op) => [
      { ...x!, shape: shapes.sliceShape(x!.shape, nums(attrs, "begin"), nums(attrs, "size"), op, printType(x!)) },
    ],
  },
  /** Zero padding: the transpose of slice. */
  pad: {
    infer: ([x], attrs) => [
      {
        ...x!,
        shape: x!.shape.map((d, i) => (d === null ? null : (d as number) + nums(attrs, "before")[i]! + nums(attrs, "after")[i]!)),
      },
    ],
  },
  one_hot: {
    infer: ([x], attrs, op) => {
      requireDType(op, x!.dtype, "int32");
      return [{ shape: [...x!.shape, num(attrs, "depth")], dtype: "float32", placement: x!.placement }];
    },
  },
  reduce_sum: reduction("numeric"),
  reduce_mean: reduction("float"),
  reduce_max: reduction("numeric"),
  reduce_min: reduction("numeric"),
  argmax: {
    infer: ([x], attrs, op) => [
      {
        shape: shapes.reduceShape(x!.shape, [num(attrs, "axis")], false, op, printType(x!)),
        dtype: "int32",
        placement: x!.placement,
      },
    ],
  },
  softmax: {
    infer: ([x], attrs, op) => {
      shapes.normalizeAxis(num(attrs, "axis"), x!.shape.length, op, printType(x!));
      return [{ ...x!, dtype: elementwiseDType(op, "float", x!.dtype) }];
    },
  },
  log_softmax: {
    infer: ([x], attrs, op) => {
      shapes.normalizeAxis(num(attrs, "axis"), x!.shape.length, op, printType(x!));
      return [{ ...x!, dtype: elementwiseDType(op, "float", x!.dtype) }];
    },
  },

  // convolution and pooling, NHWC
  conv2d: {
    infer: ([x, f], attrs, op) => {
      requireRank(op, x!, 4);
      requireRank(op, f!, 4);
      const placement = joinPlacement(op, x!, f!);
      const dtype = elementwiseDType(op, "float", x!.dtype, f!.dtype);
      if (!shapes.dimsAgree(x!.shape[3]!, f!.shape[2]!)) {
        throw ftError("FT202", {
          op,
          a: printType(x!),
          b: printType(f!),
          ka: String(x!.shape[3] ?? "?"),
          kb: String(f!.shape[2] ?? "?"),
        });
      }
      const [kh, kw] = f!.shape as number[];
      return [{ shape: windowShape(x!, [kh!, kw!], f!.shape[3]!, attrs), dtype, placement }];
    },
  },
  /** Gradient of conv2d with respect to its input: inputs (cotangent, filter, like-input). */
  conv2d_grad_input: { infer: ([ct, , like], _attrs, op) => [{ ...like!, placement: joinPlacement(op, ct!, like!) }] },
  /** Gradient of conv2d with respect to its filter: inputs (input, cotangent, like-filter). */
  conv2d_grad_filter: { infer: ([x, , like], _attrs, op) => [{ ...like!, placement: joinPlacement(op, x!, like!) }] },
  max_pool: {
    infer: ([x], attrs, op) => {
      requireRank(op, x!, 4);
      const [wh, ww] = nums(attrs, "window") as [number, number];
      return [{ ...x!, dtype: elementwiseDType(op, "float", x!.dtype), shape: windowShape(x!, [wh, ww], x!.shape[3]!, attrs) }];
    },
  },
  /** Gradient of max_pool: inputs (input, cotangent); routes each cotangent to its window's maximum. */
  max_pool_grad: { infer: ([x]) => [x!] },
  /**
   * The transpose of max_pool_grad, and max_pool's tangent: inputs (input, t like the input);
   * per window, t at the window's first maximum of the input.
   */
  max_pool_pick: {
    infer: ([x, t], attrs, op) => {
      const [wh, ww] = nums(attrs, "window") as [number, number];
      return [{ ...t!, placement: joinPlacement(op, x!, t!), shape: windowShape(x!, [wh, ww], x!.shape[3]!, attrs) }];
    },
  },

  // placement
  federated_broadcast: federated("server", "clients-equal"),
  federated_sum: federated("clients", "server", "numeric"),
  federated_mean: federated("clients", "server", "float"),
  federated_max: federated("clients", "server", "numeric"),
  federated_min: federated("clients", "server", "numeric"),

  ...randomPrimitives,
  ...securePrimitives,
  ...sequencePrimitives,
  ...robustPrimitives,

  // control: types come from the bodies
  map: {
    infer: (inputs, _attrs, _op, bodies) => {
      const placement = mapPlacement(inputs);
      return bodies![0]!.map((t) => ({ ...t, placement }));
    },
    bodyParams: (operands) => [operands.map(asMember)],
  },
  scan: {
    bodyParams: (operands, attrs) => {
      const carries = num(attrs, "carries");
      return [operands.map((t, i) => (i < carries ? t : { ...t, shape: t.shape.slice(1) }))];
    },
    infer: (inputs, attrs, _op, bodies) => {
      const carries = num(attrs, "carries");
      // The steps are the xs' leading dim (as specialised), or the given length when there are no xs.
      const length = inputs.length > carries ? inputs[carries]!.shape[0]! : (attrs.length as DimValue);
      const out = bodies![0]!;
      return out.map((t, i) => (i < carries ? inputs[i]! : { ...t, shape: [length, ...t.shape] }));
    },
  },
  aggregate: {
    infer: (_inputs, _attrs, _op, bodies) => bodies![2]!.map((t) => ({ ...t, placement: "server" })),
    bodyParams: (operands, attrs) => {
      const members = operands.slice(0, num(attrs, "members")).map(asMember);
      const acc = operands.slice(num(attrs, "members")).map(asMember);
      return [[...acc, ...members], [...acc, ...acc], acc];
    },
  },
  /**
   * The cotangents of aggregate's members: operands (members, zero, the result's cotangents);
   * bodies accumulate, merge and report, then their pullbacks: (acc, member, ct of the new
   * acc) to (ct of acc, ct of member), (a, b, ct of merged) to (ct of a, ct of b), and (acc,
   * ct of the result) to (ct of acc). Runs the fold again, then back through it client by client.
   */
  aggregate_vjp: {
    infer: (inputs, attrs) => inputs.slice(0, num(attrs, "members")).map((t) => ({ ...t, placement: "clients" })),
    bodyParams: (operands, attrs) => {
      const [memberCount, accCount] = [num(attrs, "members"), num(attrs, "accumulators")];
      const members = operands.slice(0, memberCount).map(asMember);
      const acc = operands.slice(memberCount, memberCount + accCount).map(asMember);
      const resultCts = operands.slice(memberCount + accCount).map(asMember);
      return [[...acc, ...members], [...acc, ...acc], acc, [...acc, ...members, ...acc], [...acc, ...acc, ...acc], [...acc, ...resultCts]];
    },
  },
};

export function inferNode(
  op: string,
  inputs: readonly ValueType[],
  attrs: Attrs,
  userOp: string = op,
  bodyOutputs?: readonly (readonly ValueType[])[],
): ValueType[] {
  const rule = primitives[op];
  if (rule === undefined) throw new Error(`unknown primitive ${op}`);
  return rule.infer(inputs, attrs, userOp, bodyOutputs);
}
