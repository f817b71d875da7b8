/**
 * The placement primitives (SPEC section 3): broadcast, map, the reductions and aggregate.
 * Each works on whole trees; tsc reports misuse through the parameter types, and the same
 * checks run while tracing, with the same codes and texts.
 */
import type {
  BroadcastCheck,
  Got,
  Presumed,
  MapArgCheck,
  MapResult,
  MapResultCheck,
  MembersOf as MemberOf,
  Moved,
  ReduceCheck,
  Validate,
} from "../../types/placement.js";
import type { Message } from "../../types/errors.js";
import type { Print } from "../../types/print.js";
import type { AtClients, LeafPaths, Place, PlacementsOf, Tensor, TreeLike } from "../../types/tensor.js";
import { mapAdvice } from "../errors/catalogue.js";
import { ftError } from "../errors/error.js";
import { isAtClients } from "../ir/placement.js";
import { printType } from "../ir/print.js";
import { privacyError } from "../ir/privacy.js";
import type { Placement, TreeDef, ValueType } from "../ir/types.js";
import { emitBinary } from "./elementwise.js";
import { currentGraph, isTracer, traceBody, type Tracer } from "./trace.js";
import { describeValue, flatten, leafPaths, unflatten } from "./tree.js";
import { expectFunction } from "./values.js";

/** "T" or "T at path", as types/placement.ts prints an offending leaf. */
export function gotAt(type: ValueType, path: string): string {
  return path === "" ? printType(type) : `${printType(type)} at ${path}`;
}

/** A tree of tracers, flattened, with each leaf's path. */
export function flattenTracers(tree: unknown, what: string): { leaves: Tracer[]; def: TreeDef; paths: string[] } {
  const { leaves, def } = flatten(tree, isTracer, what);
  return { leaves, def, paths: leafPaths(def) };
}

/** FT105 for members, else the given error for the first leaf not at an allowed placement. */
export function checkLeaves(
  op: string,
  leaves: readonly Tracer[],
  paths: readonly string[],
  allowed: (p: Placement) => boolean,
  fail: (got: string, placement: Placement) => Error,
): void {
  if (leaves.some((t) => t.placement === "member")) throw ftError("FT105", { op });
  const bad = leaves.findIndex((t) => !allowed(t.placement));
  if (bad >= 0) throw fail(gotAt(leaves[bad]!.type, paths[bad]!), leaves[bad]!.placement);
}

/**
 * FT109 for a reduction that is no declassifying aggregator (src/ir/privacy.ts) of a tree
 * with a private leaf: the first one, with its path, as types/placement.ts PrivacyCheck prints it.
 */
export function checkNotPrivate(op: string, leaves: readonly Tracer[], paths: readonly string[]): void {
  const leak = leaves.findIndex((t) => t.type.private === true);
  if (leak >= 0) throw privacyError(`${op}()`, gotAt(leaves[leak]!.type, paths[leak]!));
}

/**
 * FT105 for broadcast() or a reduction called inside a per-client function, whatever its
 * operand: a value captured from outside is no member, but moving it between SERVER and
 * CLIENTS there is the same mistake.
 */
export function checkOutsidePerClient(op: string): void {
  if (currentGraph(op).perClient) throw ftError("FT105", { op });
}

/**
 * What every reduction over the clients checks of its argument's leaves first: FT105 inside
 * a per-client function or for members, FT103 for the first leaf not at the CLIENTS.
 */
export function checkClientsArgument(op: string, leaves: readonly Tracer[], paths: readonly string[]): void {
  checkOutsidePerClient(op);
  checkLeaves(op, leaves, paths, isAtClients, (got) => ftError("FT103", { op, got }));
}

function federated(op: string, primitive: string, tree: unknown): unknown {
  const { leaves, def, paths } = flattenTracers(tree, `${op}() argument`);
  const graph = currentGraph(op);
  if (primitive === "federated_broadcast") {
    checkOutsidePerClient(op);
    checkLeaves(op, leaves, paths, (p) => p === "server", (got) => ftError("FT101", { got }));
  } else {
    checkClientsArgument(op, leaves, paths);
    checkNotPrivate(op, leaves, paths);
  }
  return unflatten(def, leaves.map((t) => graph.emit(primitive, [t], {}, op)[0]!));
}

/**
 * Copies a SERVER value (or tree) to every client: `T@SERVER` to `T@CLIENTS`.
 *
 * @placement `T@SERVER` to `T@CLIENTS` (all-equal members); a CLIENTS or local argument is FT101,
 * one inside map's function FT105.
 */
export function broadcast<T extends TreeLike>(x: Validate<T, BroadcastCheck<T>>): Presumed<Moved<T, "clients-equal">> {
  return federated("broadcast", "federated_broadcast", x) as never;
}

type Numeric = "float32" | "int32";
/**
 * The sum over the clients of every leaf of a CLIENTS tree, at the SERVER: TFF's federated_sum.
 * f32 or i32 leaves.
 *
 * @placement `{T}@CLIENTS` to `T@SERVER`; a SERVER or local argument is FT103, one inside map's
 * function FT105, private client data FT109.
 */
export function reduceSum<T extends TreeLike>(x: Validate<T, ReduceCheck<"reduceSum", T, Numeric>>): Presumed<Moved<T, "server">> {
  return federated("reduceSum", "federated_sum", x) as never;
}
/**
 * The unweighted mean over the clients of every leaf of a CLIENTS tree, at the SERVER: TFF's
 * federated_mean. float32 leaves; use reduceWeightedMean to weight by example counts.
 *
 * @placement `{T}@CLIENTS` to `T@SERVER`; a SERVER or local argument is FT103, one inside map's
 * function FT105, private client data FT109.
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(x)); // (<x={f32[3]}@CLIENTS> -> f32[3]@SERVER)
 */
export function reduceMean<T extends TreeLike>(x: Validate<T, ReduceCheck<"reduceMean", T, "float32">>): Presumed<Moved<T, "server">> {
  return federated("reduceMean", "federated_mean", x) as never;
}
/**
 * The largest value over the clients of every entry of a CLIENTS tree, at the SERVER (f32 or i32);
 * its gradient goes to the client that holds the maximum.
 *
 * @placement `{T}@CLIENTS` to `T@SERVER`; a SERVER or local argument is FT103, one inside map's
 * function FT105, private client data FT109.
 * @example
 * program({ loss: atClients(f32([])) }, ({ loss }) => reduceMax(loss)); // the worst client's loss
 */
export function reduceMax<T extends TreeLike>(x: Validate<T, ReduceCheck<"reduceMax", T, Numeric>>): Presumed<Moved<T, "server">> {
  return federated("reduceMax", "federated_max", x) as never;
}
/**
 * The smallest value over the clients of every entry of a CLIENTS tree, at the SERVER (f32 or
 * i32), as reduceMax.
 *
 * @placement `{T}@CLIENTS` to `T@SERVER`; a SERVER or local argument is FT103, one inside map's
 * function FT105, private client data FT109.
 * @example
 * program({ loss: atClients(f32([])) }, ({ loss }) => reduceMin(loss)); // the best client's loss
 */
export function reduceMin<T extends TreeLike>(x: Validate<T, ReduceCheck<"reduceMin", T, Numeric>>): Presumed<Moved<T, "server">> {
  return federated("reduceMin", "federated_min", x) as never;
}

type WeightCheck<W> =
  | ReduceCheck<"reduceWeightedMean", W>
  | (W extends Tensor<[], "float32"> ? never : Message<"FT207", { op: "reduceWeightedMean"; got: Print<W> }>);

/**
 * sum_i(w_i x_i) / sum_i(w_i) over the clients, for every leaf of x: FedAvg's
 * example-weighted mean when w is each client's example count.
 * @placement `x` and `w` (an f32[] per client) at the CLIENTS to `T@SERVER`: sum(w x) / sum(w); a
 * misplaced x or w is FT103, a weight that is not a scalar per client FT207, private data FT109.
 */
export function reduceWeightedMean<T extends TreeLike, W extends Tensor>(
  x: Validate<T, ReduceCheck<"reduceWeightedMean", T, "float32">>,
  weight: Validate<W, WeightCheck<W>>,
): Presumed<Moved<T, "server">> {
  const op = "reduceWeightedMean";
  const { leaves, def, paths } = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, leaves, paths);
  const w = weight as unknown as Tracer;
  if (!isTracer(w)) throw ftError("FT207", { op, got: String(w) });
  checkLeaves(op, [w], [""], isAtClients, (got) => ftError("FT103", { op, got }));
  if (w.shape.length !== 0 || w.dtype !== "float32") throw ftError("FT207", { op, got: printType(w.type) });
  checkNotPrivate(op, [...leaves, w], [...paths, ""]);
  const graph = currentGraph(op);
  const total = graph.emit("federated_sum", [w], {}, op)[0]!;
  return unflatten(
    def,
    leaves.map((leaf) => {
      const weighted = graph.emit("federated_sum", [emitBinary("mul", op, leaf, w)], {}, op)[0]!;
      return emitBinary("div", op, weighted, total);
    }),
  ) as never;
}

type MembersOf<Xs extends readonly unknown[]> = { [K in keyof Xs]: MemberOf<Xs[K]> };

/**
 * Runs f once per client on that client's members of xs (all at the CLIENTS); the results
 * form a CLIENTS value: `{U}@CLIENTS`, or `U@CLIENTS` when every argument was all-equal.
 * @placement every argument at the CLIENTS (a SERVER one is FT102: broadcast it first); `f` sees
 * local members; the result is `{U}@CLIENTS`, or `U@CLIENTS` when all arguments were all-equal.
 * broadcast or reduce inside `f` is FT105.
 */
export function map<const Xs extends readonly TreeLike[], const R>(
  f: (...members: MembersOf<Xs>) => Validate<R, MapResultCheck<R>>,
  ...xs: { [K in keyof Xs]: Validate<Xs[K], MapArgCheck<Xs[K]>> }
  // When an argument fails its check, tsc gives up inferring R from f (unknown): the result is
  // then `any`, TypeScript's own type for what an error left undecided, so nothing follows.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Presumed<unknown extends R ? any : MapResult<R, Xs>> {
  const op = "map";
  expectFunction(f, "map() function");
  const args = xs.map((x, i) => flattenTracers(x, `map() argument ${i + 1}`));
  for (const a of args) {
    checkLeaves(op, a.leaves, a.paths, isAtClients, (got, placement) =>
      ftError("FT102", { got, advice: mapAdvice[placement === "server" ? "server" : "local"] }),
    );
  }
  const inputs = args.flatMap((a) => a.leaves);
  let outDef: TreeDef = 0;
  const body = traceBody(
    op,
    inputs.map((t) => ({ ...t.type, placement: "member" as const })),
    (members) => {
      let next = 0;
      const memberTrees = args.map((a) => unflatten(a.def, members.slice(next, (next += a.leaves.length))));
      const out = flattenTracers((f as (...m: unknown[]) => unknown)(...memberTrees), "map() result");
      out.leaves.forEach((t, i) => {
        if (t.placement !== "member" && t.placement !== "local") {
          throw ftError("FT106", { got: gotAt(t.type, out.paths[i]!), outer: "map()'s result" });
        }
      });
      outDef = out.def;
      return out.leaves;
    },
    { perClient: true, inputVaries: inputs.map((t) => t.placement === "clients") },
  );
  const operands = body.clientIndex === undefined ? inputs : [...inputs, body.clientIndex];
  return unflatten(outDef, currentGraph(op).emit("map", operands, {}, op, [body])) as never;
}

/** The accumulator as the per-client functions of aggregate() see it and return it. */
type Acc<U> = Place<U, "member">;
type AccResult<U> = Place<U, "member" | "local">;

/**
 * FT208 for each accumulator leaf that zero() builds from a placed value: every group of
 * clients starts its fold from the same local constants (a SERVER value would have to be
 * broadcast first, and then it is no constant).
 */
type ZeroCheck<U> = [Extract<PlacementsOf<U>, "server" | AtClients>] extends [never]
  ? never
  : ZeroMessage<Got<LeafPaths<U, "server" | AtClients>>>;
type ZeroMessage<Got extends string> = Message<"FT208", { what: "aggregate() zero()"; got: Got; want: "an accumulator"; why: typeof zeroRule }>;
const zeroRule = "it must start from local constants";

/**
 * FT106 for each leaf of report()'s result at a placement: a value it captured, which would
 * reach the SERVER unreduced (private data would leak so).
 */
type ReportCheck<R> = [Extract<PlacementsOf<R>, "server" | AtClients>] extends [never]
  ? never
  : Message<"FT106", { got: Got<LeafPaths<R, "server" | AtClients>>; outer: typeof reportOuter }>;
const reportOuter = "aggregate()'s report";

/**
 * The four functions of `aggregate`, as TFF's federated_aggregate takes them: `zero` makes the
 * accumulator from constants, `accumulate` folds a client's member in, `merge` combines two
 * partial accumulators, `report` turns the final one into the SERVER result.
 *
 * @example
 * const sumOfSquares: Aggregation<Tensor<[], "float32", "clients">, Tensor<[], "float32", "local">, Tensor<[], "float32", "local">> = {
 *   zero: () => zeros([]),
 *   accumulate: (acc, member) => add(acc, mul(member, member)),
 *   merge: (a, b) => add(a, b),
 *   report: (acc) => acc,
 * };
 */
export interface Aggregation<X, U, R> {
  /** The initial accumulator, built from constants. */
  zero: () => Validate<U, ZeroCheck<U>>;
  /** Folds one client's member into a partial accumulator. */
  accumulate: (acc: Acc<U>, member: Place<X, "member">) => AccResult<U>;
  /** Combines two partial accumulators (from disjoint groups of clients). */
  merge: (a: Acc<U>, b: Acc<U>) => AccResult<U>;
  /** Turns the final accumulator into the result, placed at the SERVER: of the accumulator and constants only (FT106). */
  report: (acc: Acc<U>) => Validate<R, ReportCheck<R>>;
}

/**
 * The generic reduction of TFF's federated_aggregate: clients are split into groups, each
 * group folds its members into zero() with accumulate, the partial results are merged, and
 * report makes the SERVER value.
 * @placement `{T}@CLIENTS` to `T@SERVER`; a SERVER or local argument is FT103, one inside map's
 * function FT105, private client data FT109. zero, merge and report see local values only.
 * @example
 * program({ x: atClients(f32([])) }, ({ x }) =>
 *   aggregate(x, {
 *     zero: () => zeros([]),
 *     accumulate: (acc, member) => add(acc, member),
 *     merge: (a, b) => add(a, b),
 *     report: (acc) => acc,
 *   }),
 * );
 */
export function aggregate<X extends TreeLike, U extends TreeLike, R extends TreeLike>(
  x: Validate<X, ReduceCheck<"aggregate", X>>,
  fns: Aggregation<X, U, R>,
): Presumed<Place<R, "server">> {
  const op = "aggregate";
  if (typeof fns !== "object" || fns === null) throw ftError("FT302", { what: "aggregate() functions", why: `expected { zero, accumulate, merge, report }, got ${describeValue(fns)}` });
  for (const name of ["zero", "accumulate", "merge", "report"] as const) expectFunction(fns[name], `aggregate() ${name}`);
  const xs = flattenTracers(x, "aggregate() argument");
  checkLeaves(op, xs.leaves, xs.paths, isAtClients, (got) => ftError("FT103", { op, got }));
  checkOutsidePerClient(op);
  checkNotPrivate(op, xs.leaves, xs.paths);
  const zero = flattenTracers(fns.zero(), "aggregate() zero");
  zero.leaves.forEach((t, i) => {
    if (isPlaced(t.placement)) throw ftError("FT208", { what: "aggregate() zero()", got: gotAt(t.type, zero.paths[i]!), want: "an accumulator", why: zeroRule });
  });
  const accTypes = zero.leaves.map((t) => ({ ...t.type, placement: "member" as const }));
  const memberTypes = xs.leaves.map((t) => ({ ...t.type, placement: "member" as const }));
  const checkAcc = (what: string, out: unknown): Tracer[] => {
    const acc = flattenTracers(out, `aggregate() ${what} result`);
    checkCarry(`aggregate() ${what}`, "accumulator", acc, zero);
    return acc.leaves;
  };
  const accTree = (leaves: Tracer[]) => unflatten(zero.def, leaves);
  const perClient = { perClient: true };
  const accumulate = traceBody(
    op,
    [...accTypes, ...memberTypes],
    (ins) => checkAcc("accumulate", fns.accumulate(accTree(ins.slice(0, accTypes.length)) as never, unflatten(xs.def, ins.slice(accTypes.length)) as never)),
    perClient,
  );
  const merge = traceBody(
    op,
    [...accTypes, ...accTypes],
    (ins) => checkAcc("merge", fns.merge(accTree(ins.slice(0, accTypes.length)) as never, accTree(ins.slice(accTypes.length)) as never)),
    perClient,
  );
  let reportDef: TreeDef = 0;
  const report = traceBody(
    op,
    accTypes,
    (ins) => {
      const out = flattenTracers(fns.report(accTree(ins) as never), "aggregate() report result");
      out.leaves.forEach((t, i) => {
        if (isPlaced(t.placement)) throw ftError("FT106", { got: gotAt(t.type, out.paths[i]!), outer: reportOuter });
      });
      reportDef = out.def;
      return out.leaves;
    },
    perClient,
  );
  const outputs = currentGraph(op).emit(
    "aggregate",
    [...xs.leaves, ...zero.leaves],
    { members: xs.leaves.length, accumulators: zero.leaves.length },
    op,
    [accumulate, merge, report],
  );
  return unflatten(reportDef, outputs) as never;
}

type Flat = { readonly leaves: readonly Tracer[]; readonly def: TreeDef };

/**
 * FT208 unless a loop body's or an accumulator function's result (`what`) has the carry's
 * tree structure, shapes and dtypes, with the texts tsc gives (src/front/loops.ts,
 * CarryCheck): a key of the carry that the result lacks, a key the carry lacks, or the first
 * leaf whose type differs. Placements local and member count as the same: both are one
 * client's (or no) value.
 */
export function checkCarry(what: string, subject: "carry" | "accumulator", got: Flat, want: Flat): void {
  const mismatch = carryMismatch(got.def, want.def, got.leaves, want.leaves);
  if (mismatch !== undefined) {
    throw ftError("FT208", { what, got: mismatch.got, want: `a ${subject} of ${mismatch.want}`, why: `the ${subject} must keep its type` });
  }
}

function carryMismatch(got: TreeDef, want: TreeDef, gotLeaves: readonly Tracer[], wantLeaves: readonly Tracer[]): { got: string; want: string } | undefined {
  if (typeof want === "number") {
    if (typeof got !== "number") return { got: "a tree", want: printType(wantLeaves[want]!.type) };
    const [a, b] = [gotLeaves[got]!.type, wantLeaves[want]!.type];
    return sameCarryType(a, b) ? undefined : { got: printType(a), want: printType(b) };
  }
  const gotKeys = typeof got === "number" ? [] : Object.keys(got);
  const wantKeys = Object.keys(want);
  for (const key of wantKeys) {
    if (!gotKeys.includes(key)) return { got: `no ${key}`, want: `a tree with ${key}` };
    const inner = carryMismatch((got as Record<string, TreeDef>)[key]!, (want as Record<string, TreeDef>)[key]!, gotLeaves, wantLeaves);
    if (inner !== undefined) return inner;
  }
  const extra = gotKeys.find((key) => !wantKeys.includes(key));
  return extra === undefined ? undefined : { got: `a tree with ${extra}`, want: `a tree without ${extra}` };
}

const sameCarryType = (a: ValueType, b: ValueType): boolean =>
  a.dtype === b.dtype &&
  a.shape.length === b.shape.length &&
  a.shape.every((d, i) => d === b.shape[i]) &&
  (a.placement === b.placement || (!isPlaced(a.placement) && !isPlaced(b.placement)));

const isPlaced = (p: Placement): boolean => p !== "local" && p !== "member";
