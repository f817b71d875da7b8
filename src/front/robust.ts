/**
 * Robust aggregation (issue 12 section 2): reductions {T}@CLIENTS -> T@SERVER that bound what
 * a few poisoned clients can do to the result, and the per-client norm bounds that go with
 * them. None of them is private: the server sees every client's update in the clear (use
 * secureSum or DP-FedAvg for that).
 *
 * Each reduction is a selection primitive (src/ir/robust-primitives.ts) that marks, per
 * client, what the aggregate keeps, followed by an ordinary sum over the clients of the marked
 * values divided by the sum of the marks. So the gradient flows to the kept clients (1 / kept
 * each), as it does in jax for a median written with sort, and batching, lowering and
 * printing are reduceSum's. None has a MapReduce form: they need the whole cohort (FT315 when
 * a round is cut into chunks; such rounds run whole).
 */
import type { Fail, Failures } from "../../types/errors.js";
import type { FloatTreeCheck, RequireDType } from "../../types/ops.js";
import type { JoinPlacement, Moved, Presumed, ReduceCheck, Tainted, Validate } from "../../types/placement.js";
import type { Leaves, PlacementOf, PlacementsOf, Tensor, TreeLike, Typed } from "../../types/tensor.js";
import type { Attrs } from "../ir/primitives.js";
import { ftError } from "../errors/error.js";
import { checkKrumCounts, checkTrimFraction } from "../ir/robust-primitives.js";
import { emitBinary } from "./elementwise.js";
import { checkClientsArgument, checkNotPrivate, flattenTracers, reduceWeightedMean } from "./placement.js";
import { currentGraph, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";

type FloatReduce<Op extends string, T> = Validate<T, ReduceCheck<Op, T, "float32">>;

/** Each leaf's sum over the clients of x * mask, divided by the sum of the mask: the mean of what the mask keeps. */
function maskedMean(op: string, x: unknown, primitive: string, attrs: Attrs): unknown {
  const { leaves, def, paths } = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, leaves, paths);
  // Robust aggregators compare every client's values in the clear: never for private data.
  checkNotPrivate(op, leaves, paths);
  const graph = currentGraph(op);
  const sum = (t: Tracer) => graph.emit("federated_sum", [t], {}, op)[0]!;
  return unflatten(
    def,
    leaves.map((leaf) => {
      const mask = graph.emit(primitive, [leaf], attrs, op)[0]!;
      return emitBinary("div", op, sum(emitBinary("mul", op, leaf, mask)), sum(mask));
    }),
  );
}

/**
 * The coordinate-wise median over the clients of every leaf (Yin et al. 2018): the middle
 * client's value, or the mean of the two middle ones for an even number of clients.
 * `{T}@CLIENTS` to `T@SERVER`.
 * @placement `{T}@CLIENTS` to `T@SERVER` (float32); FT109 on private data.
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => reduceMedian(u)); // f32[10]@SERVER
 */
export function reduceMedian<T extends TreeLike>(x: FloatReduce<"reduceMedian", T>): Presumed<Moved<T, "server">> {
  return maskedMean("reduceMedian", x, "federated_trim_mask", { trim: "median" }) as never;
}

/**
 * reduceTrimmedMean()'s options: the fraction trimmed from each end.
 *
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => reduceTrimmedMean(u, { trim: 0.2 } satisfies TrimmedMeanOptions));
 */
export interface TrimmedMeanOptions {
  /** The fraction beta in [0, 0.5) of clients dropped from each end of every coordinate's order: floor(beta C) each side. */
  readonly trim: number;
}

/**
 * The coordinate-wise trimmed mean over the clients (Yin et al. 2018): per coordinate, the
 * mean of the clients' values less the floor(trim C) largest and smallest. trim 0 is the
 * plain mean. FT321 when trim is outside [0, 0.5) or leaves no client.
 * @placement `{T}@CLIENTS` to `T@SERVER` (float32); FT109 on private data.
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => reduceTrimmedMean(u, { trim: 0.1 }));
 */
export function reduceTrimmedMean<T extends TreeLike>(x: FloatReduce<"reduceTrimmedMean", T>, options: TrimmedMeanOptions): Presumed<Moved<T, "server">> {
  const trim = (options as TrimmedMeanOptions | undefined)?.trim;
  checkTrimFraction("reduceTrimmedMean", trim);
  return maskedMean("reduceTrimmedMean", x, "federated_trim_mask", { trim }) as never;
}

/**
 * krum()'s options: the Byzantine clients f to tolerate and how many lowest-scoring clients to
 * average.
 *
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => krum(u, { byzantine: 2, select: 3 } satisfies KrumOptions));
 */
export interface KrumOptions {
  /** f: the Byzantine clients to tolerate; Krum needs more than 2f + 2 clients (FT321). */
  readonly byzantine: number;
  /** m: how many clients of lowest score to average (multi-Krum); 1, plain Krum, by default. */
  readonly select?: number;
}

/**
 * Krum and multi-Krum (Blanchard et al. 2017) over whole update trees: each client's score is
 * the sum of squared Euclidean distances, over all leaves flattened together, to its
 * C - f - 2 nearest other clients; the result is the mean of the `select` clients of lowest
 * score (ties by client order). `{T}@CLIENTS` to `T@SERVER`.
 * @placement `{T}@CLIENTS` to `T@SERVER` (float32); FT109 on private data; FT321 with too few
 * clients.
 */
export function krum<T extends TreeLike>(x: FloatReduce<"krum", T>, options: KrumOptions): Presumed<Moved<T, "server">> {
  const op = "krum";
  const { byzantine, select = 1 } = (options ?? {}) as KrumOptions;
  checkKrumCounts(op, byzantine, select);
  const { leaves, paths } = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, leaves, paths);
  checkNotPrivate(op, leaves, paths);
  const chosen = currentGraph(op).emit("federated_krum_mask", leaves, { byzantine, select }, op)[0]!;
  return reduceWeightedMean(x as never, chosen as never) as never;
}

/**
 * The global L2 norm of a tree (every leaf's entries together), at the tree's placement.
 *
 * @placement the tree's placement: `T@P` to `f32[]@P`.
 * @example
 * program({ u: atClients({ w: f32([10]), b: f32([1]) }) }, ({ u }) => reduceMax(map((um) => globalNorm(um), u)));
 */
export function globalNorm<T extends TreeLike>(x: Validate<T, FloatTreeCheck<"globalNorm", T>>): Tensor<[], "float32", PlacementsOf<T>> {
  const op = "globalNorm";
  const graph = currentGraph(op);
  const { leaves } = flattenTracers(x, `${op}() argument`);
  if (leaves.length === 0) throw ftError("FT302", { what: `${op}() argument`, why: "the tree has no leaves" });
  const squares = leaves.map((leaf) => graph.emit("reduce_sum", [emitBinary("mul", op, leaf, leaf)], { axes: null, keepDims: false }, op)[0]!);
  const total = squares.reduce((a, b) => emitBinary("add", op, a, b));
  return graph.emit("sqrt", [total], {}, op)[0]! as never;
}

/** A norm bound: a number or an f32[] value (another dtype is FT205, BoundCheck). */
type Bound = number | Tensor<[]>;
/**
 * FT205 for a bound that is not f32; FT104/FT102/FT105/FT106 where a bound cannot meet the
 * tree's global norm (an f32[] at each leaf's placement), in the words tracing uses: the bound
 * joins every leaf of the result.
 */
type BoundCheck<Op extends string, T, B> = B extends Typed
  ? [RequireDType<Op, B, "float32">] extends [Fail<infer M>]
    ? M
    : Leaves<T> extends infer L
      ? L extends Typed
        ? Failures<JoinPlacement<Op, Tensor<[], "float32", PlacementOf<L>>, B>>
        : never
      : never
  : never;

/**
 * Every leaf times one factor computed from the tree's global norm: each result leaf depends
 * on every leaf of x and on the bound (types: Tainted with all of them).
 */
function scaledByNorm<T>(op: string, x: T, maxNorm: unknown, factor: (norm: Tracer, bound: Tracer | number) => Tracer): T {
  if (typeof maxNorm === "number" && !(maxNorm > 0)) throw ftError("FT302", { what: `${op}() bound`, why: `${maxNorm} is not a norm > 0` });
  const { leaves, def } = flattenTracers(x, `${op}() argument`);
  const scale = factor(globalNorm(x as never) as unknown as Tracer, maxNorm as Tracer | number);
  return unflatten(def, leaves.map((leaf) => emitBinary("mul", op, leaf, scale))) as T;
}

/**
 * A client's update scaled to global L2 norm at most maxNorm: x min(1, maxNorm / ||x||), the
 * norm bounding of Sun et al. 2019 ("Can You Really Backdoor Federated Learning?") and the
 * clipping of DP-FedAvg. Use it inside map() before any reduction.
 * @placement a tree at the CLIENTS (or a member inside map) keeps its placement: `x@P` to `@P`;
 * use it inside map before a reduction.
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => reduceMean(map((um) => clipByNorm(um, 1), u)));
 */
export function clipByNorm<T extends TreeLike, B extends Bound>(x: Validate<T, FloatTreeCheck<"clipByNorm", T>>, maxNorm: Validate<B, BoundCheck<"clipByNorm", T, B>>): Tainted<T, [T, B]> {
  return scaledByNorm("clipByNorm", x, maxNorm as Bound, (norm, bound) => emitBinary("div", "clipByNorm", bound, emitBinary("maximum", "clipByNorm", norm, bound))) as never;
}

/**
 * A client's update left as it is when its global L2 norm is at most maxNorm, zeroed otherwise (norm zeroing).
 *
 * @placement a tree at the CLIENTS (or a member inside map) keeps its placement: `x@P` to `@P`;
 * use it inside map before a reduction.
 * @example
 * program({ u: atClients(f32([10])) }, ({ u }) => reduceMean(map((um) => zeroAboveNorm(um, 5), u)));
 */
export function zeroAboveNorm<T extends TreeLike, B extends Bound>(x: Validate<T, FloatTreeCheck<"zeroAboveNorm", T>>, maxNorm: Validate<B, BoundCheck<"zeroAboveNorm", T, B>>): Tainted<T, [T, B]> {
  const op = "zeroAboveNorm";
  return scaledByNorm(op, x, maxNorm as Bound, (norm, bound) => currentGraph(op).emit("cast", [emitBinary("less_equal", op, norm, bound)], { dtype: "float32" }, op)[0]!) as never;
}
