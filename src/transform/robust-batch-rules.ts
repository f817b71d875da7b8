/**
 * Client-batching rules of the robust selections (src/ir/robust-primitives.ts): with the
 * client axis in front, each is a few sorts, a matmul and comparisons along axis 0, so the
 * lowering of those ops on every backend serves them too.
 */
import type { Tracer } from "../front/trace.js";
import { krumNeighbours, trimmedPerSide } from "../ir/robust-primitives.js";
import type { BatchRule } from "./batch-types.js";
import { materializeIn, prim, primOutputs } from "./emit.js";

const constant = (value: number, dtype: "int32" | "float32") => prim("constant", [], { value, dtype, shape: [] });

/** Each entry's rank (0 = smallest) along `axis`, ties by position: the inverse of the sorting permutation. */
function ranks(x: Tracer, axis: number): Tracer {
  const order = primOutputs("sort", [x], { axis, descending: false, k: null })[1]!;
  return primOutputs("sort", [order], { axis, descending: false, k: null })[1]!;
}

const asMask = (keep: Tracer) => prim("cast", [keep], { dtype: "float32" });

const trimMask: BatchRule = (ctx) => {
  const x = materializeIn(ctx, ctx.inputs[0]!);
  const trim = ctx.node.attrs.trim as number | "median";
  const k = trimmedPerSide(trim === "median" ? "reduceMedian" : "reduceTrimmedMean", trim, ctx.clients);
  const rank = ranks(x, 0);
  const kept = prim("logical_and", [prim("greater_equal", [rank, constant(k, "int32")]), prim("less", [rank, constant(ctx.clients - k, "int32")])]);
  return [asMask(kept)];
};

/** Squared Euclidean distances between the rows of x [C, N]: |a|^2 + |b|^2 - 2 a.b, at least 0. */
function squaredDistances(x: Tracer): Tracer {
  const gram = prim("matmul", [x, prim("transpose", [x], { perm: [1, 0] })]);
  const norms = prim("reduce_sum", [prim("mul", [x, x])], { axes: [1], keepDims: true });
  const sum = prim("add", [norms, prim("transpose", [norms], { perm: [1, 0] })]);
  return prim("maximum", [prim("sub", [sum, prim("mul", [gram, constant(2, "float32")])]), constant(0, "float32")]);
}

const krumMask: BatchRule = (ctx) => {
  const { byzantine, select } = ctx.node.attrs as { byzantine: number; select: number };
  const C = ctx.clients;
  const neighbours = krumNeighbours("krum", byzantine, select, C);
  const rows = ctx.inputs.map((leaf) => {
    const batched = materializeIn(ctx, leaf);
    const size = (batched.shape as number[]).slice(1).reduce((a, b) => a * b, 1);
    return prim("reshape", [batched], { shape: [C, size] });
  });
  const flat = rows.length === 1 ? rows[0]! : prim("concat", rows, { axis: 1 });
  // A client is no neighbour of itself: its own distance is pushed past every other.
  const self = prim("mul", [prim("one_hot", [prim("iota", [], { length: C })], { depth: C }), constant(1e30, "float32")]);
  const distances = prim("add", [squaredDistances(flat), self]);
  const nearest = primOutputs("sort", [distances], { axis: 1, descending: false, k: neighbours })[0]!;
  const score = prim("reduce_sum", [nearest], { axes: [1], keepDims: false });
  return [asMask(prim("less", [ranks(score, 0), constant(select, "int32")]))];
};

export const robustBatchRules: Record<string, BatchRule> = {
  federated_trim_mask: trimMask,
  federated_krum_mask: krumMask,
};
