/**
 * grad(f) and valueAndGrad(f): gradients of a scalar float32 function with respect to its
 * first argument (a tensor or a tree, such as model parameters), at any placement (SPEC
 * section 5). Calling the returned function while tracing records the forward and backward
 * computation as IR (see src/transform/vjp.ts); grad(grad(f)) works for scalar functions.
 * jvp(f, primals, tangents) is forward mode (src/transform/jvp.ts).
 */
import type { Message, Validate } from "../../types/errors.js";
import type { AsTensor, SubPath } from "../../types/ops.js";
import type { Got, PrivacyMessage, Tainted } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { DimsAgree } from "../../types/shape.js";
import type { AtClients, DType, DTypeOf, IsAny, LeafPaths, Member, Placement, PlacementOf, PlacementsOf, PrivatePlacement, ReleasedServer, Shape, ShapeOf, Tensor, Typed } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import { fillLike, prim } from "../transform/emit.js";
import { jvp as jvpGraph } from "../transform/jvp.js";
import { vjp } from "../transform/vjp.js";
import type { Placement as IrPlacement, TreeDef } from "../ir/types.js";
import { traceBody, isTracer, type Tracer } from "./trace.js";
import { flatten, leafPaths, unflatten } from "./tree.js";
import { asTracer, expectFunction } from "./values.js";

type ScalarLoss = Tensor<[], "float32", Placement>;
/** FT209 unless f returns f32[]; a result whose rank or dtype is not known statically is checked while tracing. */
type LossCheck<Op extends string, R> = IsAny<R> extends true
  ? never
  : R extends ScalarLoss
    ? never
    : R extends Tensor<infer S, infer D, Placement>
      ? number extends S["length"]
        ? never
        : DType extends D
          ? never
          : Message<"FT209", { op: Op; got: Print<R> }>
      : Message<"FT209", { op: Op; got: Print<R> }>;

/**
 * FT109 for the gradient with respect to a SERVER value of a loss computed from private data:
 * it goes back through broadcast()'s transpose, a sum of the clients' private cotangents, and
 * would be a SERVER value holding private data (tracing rejects the same transpose).
 */
type ServerGradientCheck<Op extends string, A extends readonly unknown[], R> =
  | ("server" extends PlacementsOf<A[0]>
      ? "clients-private" extends PlacementsOf<R>
        ? Placement extends PlacementsOf<R>
          ? never
          : PrivacyMessage<`${Op}()'s gradient with respect to a SERVER value`, R>
        : never
      : never)
  | ReleaseDerivativeCheck<`${Op}()'s gradient`, A[0], R>;

/**
 * FT109 for a derivative of a released value R (types/tensor.ts ReleasedServer: computed by
 * dpSum or secureSum from private data) with respect to a value X that is not itself released:
 * X may be what the release was computed from (the model at the SERVER through broadcast()'s
 * transpose, or its CLIENTS copy), and the derivative is then the mechanism's input without its
 * noise or masks. The types cannot tell that path from another (a released value that X only
 * meets at the SERVER), so they reject both; stopGradient(released) cuts the path and drops the
 * mark. A derivative with respect to private X is private already (Tainted) and stays at the
 * clients. Tracing, which sees the path, rejects only the leak (src/ir/privacy.ts).
 */
type ReleaseDerivativeCheck<What extends string, X, R> = [Extract<PlacementsOf<R>, ReleasedServer>] extends [never]
  ? never
  : Placement extends PlacementsOf<X>
    ? never
    : [Exclude<PlacementsOf<X>, ReleasedServer | PrivatePlacement>] extends [never]
      ? never
      : Message<"FT109", { what: `${What} through a release (dpSum, secureSum)`; got: ReleasedLeaves<R> }>;
/** The released leaves of R as the message shows them: "f32[]@SERVER (released)", with their paths. */
type ReleasedLeaves<R> = `${Got<LeafPaths<R, ReleasedServer>>} (released)`;

/** The arguments of a function grad() returns: the first one checked by ServerGradientCheck, where it is reported. */
type GradArgs<Op extends string, A extends readonly unknown[], R> = [ServerGradientCheck<Op, A, R>] extends [never]
  ? A
  : A extends readonly [infer First, ...infer Rest]
    ? [Validate<First, ServerGradientCheck<Op, A, R>>, ...Rest]
    : A;

const isLeaf = (x: unknown): x is Tracer | number => isTracer(x) || typeof x === "number";

/**
 * A derivative with respect to `primal`, private when the primal is (docs/language.md
 * "Privacy": derivatives do not declassify): a gradient or jvp tangent of private data is
 * private whatever it is computed from, so that no derivative through dpSum or secureSum,
 * which the mechanism's noise or masks do not protect, reaches the SERVER (FT109).
 */
const privateLike = (derivative: Tracer, primal: Tracer): Tracer =>
  primal.type.private === true && derivative.type.private !== true ? (prim("broadcast_like", [derivative, primal]) as Tracer) : derivative;

/**
 * A jvp direction at its primal's placement (and as private as it): a local tangent (a
 * constant such as ones([3])) given for a SERVER or CLIENTS primal is moved there, so that the
 * tangent rules of placement primitives (broadcast's is broadcast) see a placed value, as the
 * primal rules do.
 */
const directionLike = (tangent: Tracer, primal: Tracer): Tracer =>
  tangent.placement === primal.placement ? privateLike(tangent, primal) : (prim("broadcast_like", [tangent, primal]) as Tracer);

/** Traces f on the arguments and differentiates with respect to the first one. */
function differentiate(op: string, f: (...args: unknown[]) => unknown, args: readonly unknown[]): { value: Tracer; grads: unknown } {
  if (args.length === 0) throw ftError("FT209", { op, got: "no argument to differentiate" });
  const flat = flatten(args, isLeaf, `${op}() argument`);
  const leaves = flat.leaves.map((x) => asTracer(x, op));
  const firstArg = flatten(args[0], isLeaf, `${op}() argument`);
  const differentiated = leaves.map((t, i) => i < firstArg.leaves.length && t.dtype === "float32");
  const body = traceBody(op, leaves.map((t) => t.type), (ins) => {
    const out = f(...(unflatten(flat.def, ins) as unknown[]));
    if (!isTracer(out) || out.shape.length !== 0 || out.dtype !== "float32") {
      throw ftError("FT209", { op, got: isTracer(out) ? printType(out.type) : typeof out });
    }
    return [out];
  }, { origins: leaves });
  const { outputs, inputCotangents } = vjp(
    body.graph,
    leaves[0]!.graph.values.types,
    [...leaves, ...body.captures],
    [...differentiated, ...body.captures.map(() => false)],
    (outs) => [fillLike(1, outs[0]!)],
  );
  const grads = firstArg.leaves.map((_, i) => privateLike(inputCotangents[i] ?? fillLike(0, leaves[i]!), leaves[i]!));
  return { value: outputs[0]!, grads: unflatten(firstArg.def, grads) };
}

/**
 * The gradient of a scalar f32 function with respect to its first argument, shaped like it;
 * private (types/placement.ts Tainted) when the loss is computed from private data or the
 * argument is private.
 * @placement the gradient is shaped and placed like the first argument; inside map, per client.
 * Private (Tainted) when the loss is computed from private data, so it reaches the SERVER only
 * through a releasing aggregator (FT109).
 */
export function grad<A extends readonly unknown[], R>(f: (...args: A) => Validate<R, LossCheck<"grad", R>>): (...args: GradArgs<"grad", A, R>) => Tainted<A[0], R | A[0]> {
  expectFunction(f, "grad() function");
  return (...args) => differentiate("grad", f as never, args).grads as never;
}

/**
 * [f(args), grad(f)(args)] in one pass.
 *
 * @placement as grad: the value where f returns it, the gradient shaped and placed like the first
 * argument.
 * @example
 * program({ w: atServer(f32([3])), x: atServer(f32(["B", 3])) }, ({ w, x }) => {
 *   const [loss, g] = valueAndGrad((v: typeof w) => mean(square(matmul(x, expandDims(v, 1)))))(w);
 *   return { loss, w: sub(w, mul(g, 0.1)) };
 * });
 */
export function valueAndGrad<A extends readonly unknown[], R>(
  f: (...args: A) => Validate<R, LossCheck<"valueAndGrad", R>>,
): (...args: GradArgs<"valueAndGrad", A, R>) => [R, Tainted<A[0], R | A[0]>] {
  expectFunction(f, "valueAndGrad() function");
  return (...args) => {
    const { value, grads } = differentiate("valueAndGrad", f as never, args);
    return [value as R, grads as never];
  };
}

/**
 * The tangent each primal leaf takes: f32 of the primal's shape (FT206), at the primal's
 * placement or local (a constant direction, as the runtime accepts: FT206 too, naming jvp and
 * the tangent); `tangentWants` holds the texts, which the runtime shares.
 */
type TangentCheck<P, T, Path extends string> = IsAny<P> extends true
  ? never
  : IsAny<T> extends true
    ? never
    : P extends Typed
      ? DTypeOf<P> extends "float32"
        ? TangentLeafCheck<P, AsTensor<T, P>, Path>
        : never
      : T extends object
        ?
            | { [K in Keys<P> & keyof T]: TangentCheck<P[K], T[K], SubPath<Path, P, K>> }[Keys<P> & keyof T]
            | { [K in Exclude<Keys<P>, keyof T>]: Message<"FT107", { op: "jvp"; what: `the tangents lack ${SubPath<Path, P, K>}` }> }[Exclude<Keys<P>, keyof T>]
        : Message<"FT107", { op: "jvp"; what: `the tangents lack ${Path}` }>;
/** The keys under which a tree holds its children: an array's indices, a record's names. */
type Keys<P> = P extends readonly unknown[] ? keyof P & `${number}` : keyof P & string;
type TangentLeafCheck<P extends Typed, T, Path extends string> = T extends Typed
  ? [DTypeOf<T>] extends ["float32"]
    ? SameShape<ShapeOf<P>, ShapeOf<T>> extends true
      ? PlacementOf<T> extends TangentPlacements[PlacementOf<P>]
        ? never
        : Message<"FT206", { op: "jvp"; want: `${TangentWants["placement"]} at ${Path}`; a: Print<P>; b: Print<T> }>
      : Message<"FT206", { op: "jvp"; want: `${TangentWants["shape"]} at ${Path}`; a: Print<P>; b: Print<T> }>
    : Message<"FT206", { op: "jvp"; want: `${TangentWants["shape"]} at ${Path}`; a: Print<P>; b: Print<T> }>
  : Message<"FT206", { op: "jvp"; want: `${TangentWants["shape"]} at ${Path}`; a: Print<P>; b: "?" }>;
type SameShape<A extends Shape, B extends Shape> = A["length"] extends B["length"]
  ? { [K in keyof A]: K extends keyof B ? DimsAgree<A[K], B[K]> : true }[number] extends true
    ? true
    : false
  : false;
/** The placements a tangent may have, by its primal's: its own, or none (a constant direction). */
type TangentPlacements = {
  server: "server" | "local";
  clients: AtClients | "local";
  "clients-equal": AtClients | "local";
  "clients-private": AtClients | "local";
  local: "local";
  member: Member | "local";
  "member-private": Member | "local";
};
const tangentPlacements: { readonly [P in IrPlacement]: readonly IrPlacement[] } = {
  server: ["server", "local"],
  clients: ["clients", "clients-equal", "local"],
  "clients-equal": ["clients", "clients-equal", "local"],
  local: ["local"],
  member: ["member", "local"],
};
const tangentWants = {
  shape: "an f32 tangent of its primal's shape",
  placement: "a tangent at its primal's placement, or local,",
} as const;
type TangentWants = typeof tangentWants;

/** jvp's output tangents: R, its CLIENTS and member leaves private when By holds private data. */
type TangentOf<R, By> = [Extract<PlacementsOf<By>, PrivatePlacement>] extends [never] ? R : TaintTangent<R>;
type TaintTangent<T> = IsAny<T> extends true
  ? T
  : T extends Tensor<infer S, infer D, infer P>
    ? P extends AtClients
      ? Tensor<S, D, "clients-private">
      : P extends Member
        ? Tensor<S, D, "member-private">
        : T
    : { -readonly [K in keyof T]: TaintTangent<T[K]> };

/**
 * FT109 for private tangents whose derivative f takes to the SERVER: the output tangent there
 * is computed from them (through a reduction, or a DP or secure aggregator, whose noise or
 * masks do not reach a derivative).
 */
type TangentReleaseCheck<R, A, T> =
  | ("server" extends PlacementsOf<R>
      ? "clients-private" extends PlacementsOf<T>
        ? Placement extends PlacementsOf<T>
          ? never
          : PrivacyMessage<"jvp()'s output tangent", T>
        : never
      : never)
  | ReleaseDerivativeCheck<"jvp()'s output tangent", A, R>;

/**
 * Forward mode: [f(...primals), the derivative of f at primals along tangents], as JAX's
 * jvp. `tangents` has the structure of `primals` (an f32 tangent of the primal's shape per
 * float32 leaf, at its placement or local; int32 and bool leaves take none, whatever is
 * given). The output tangent has the structure of f's output; its CLIENTS and member leaves
 * are private when a primal or tangent is (a SERVER tangent computed from private data, such
 * as jvp through dpSum, is FT109 while tracing: the types have no private SERVER value).
 * @placement the primal output as f returns it; the tangent at the output's placement, private
 * when a primal or tangent is.
 */
export function jvp<A extends readonly unknown[], R, const T extends readonly unknown[]>(
  f: (...args: A) => R,
  primals: readonly [...A],
  tangents: Validate<T, TangentCheck<A, T, ""> | TangentReleaseCheck<R, A, T>>,
): [R, TangentOf<R, A | T>] {
  const op = "jvp";
  expectFunction(f, "jvp() function");
  const flatPrimals = flatten(primals, isLeaf, "jvp() primals");
  const flatTangents = flatten(tangents, isLeaf, "jvp() tangents");
  const primalPaths = leafPaths(flatPrimals.def);
  const tangentPaths = new Set(leafPaths(flatTangents.def));
  const lacking = primalPaths.find((p) => !tangentPaths.has(p));
  if (lacking !== undefined) throw ftError("FT107", { op, what: `the tangents lack ${lacking}` });
  const leaves = flatPrimals.leaves.map((x) => asTracer(x, op));
  const tangentByPath = new Map(leafPaths(flatTangents.def).map((p, i) => [p, flatTangents.leaves[i]]));
  const tangentLeaves = primalPaths.map((path, i) => asTracer(tangentByPath.get(path), op, leaves[i]));
  tangentLeaves.forEach((t, i) => {
    const p = leaves[i]!;
    if (p.dtype !== "float32") return;
    const sameShape = t.shape.length === p.shape.length && t.shape.every((d, j) => d === null || p.shape[j] === null || d === p.shape[j]);
    const fail = (want: string) => ftError("FT206", { op, want: `${want} at ${primalPaths[i]}`, a: printType(p.type), b: printType(t.type) });
    if (t.dtype !== "float32" || !sameShape) throw fail(tangentWants.shape);
    if (!tangentPlacements[p.placement].includes(t.placement)) throw fail(tangentWants.placement);
  });
  let outDef: TreeDef = 0;
  const body = traceBody(op, leaves.map((t) => t.type), (ins) => {
    const out = flatten(f(...(unflatten(flatPrimals.def, ins) as unknown as A)), isTracer, "jvp() result");
    outDef = out.def;
    return out.leaves;
  }, { origins: leaves });
  const directions = tangentLeaves.map((t, i) => (leaves[i]!.dtype === "float32" ? directionLike(t, leaves[i]!) : t));
  const result = jvpGraph(body.graph, [...leaves, ...body.captures], [...directions, ...body.captures.map(() => undefined)]);
  const outTangents = result.outputs.map((y, i) => result.tangents[i] ?? fillLike(0, y));
  return [unflatten(outDef, result.outputs) as R, unflatten(outDef, outTangents) as never];
}
