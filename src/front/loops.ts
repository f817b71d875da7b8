/**
 * Loops for local training and server rounds: fori(n, init, body) and scan(init, xs, body).
 * A loop traces its body once into a sub-graph (it is not unrolled); the carry must keep its
 * type from one step to the next (FT208), which tsc checks on the body's return type.
 */
import type { Message, Validate } from "../../types/errors.js";
import type { Print } from "../../types/print.js";
import type { Tainted } from "../../types/placement.js";
import type { Dim, IsAny, LeafTypes, Member, Placement, PlacementsOf, PrivatePlacement, Shape, ShapeOf, Tensor, TreeLike, Typed } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import type { DimValue, TreeDef, ValueType } from "../ir/types.js";
import { checkCarry, flattenTracers } from "./placement.js";
import { currentGraph, traceBody, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";
import { expectFunction } from "./values.js";

/**
 * Placements that hold the same kind of value from one loop step to the next; a step may add
 * private data to the carry (then that leaf is private after the loop: CarryAfter, exact per
 * leaf as tracing is, src/ir/privacy.ts, so a carry that only dpSum's result reaches stays free).
 */
type SameSide<P extends Placement> = P extends "local" | Member
  ? "local" | Member
  : P extends "clients" | "clients-private"
    ? "clients" | "clients-private"
    : P;

type LeafMatches<Want, Got> = Want extends Tensor<infer S, infer D, infer P>
  ? Got extends Tensor<S, D, SameSide<P>>
    ? true
    : false
  : false;

/** FT208 messages for carry leaves whose type changed, keys missing or added, or never (an optional field's undefined is no leaf). */
type CarryCheck<Op extends string, C, R> = C extends undefined ? never : DefinedCarryCheck<Op, C, Exclude<R, undefined>>;
type DefinedCarryCheck<Op extends string, C, R> = C extends Typed
  ? LeafMatches<C, R> extends true
    ? never
    : CarryMessage<Op, Print<R>, Print<C>>
  : C extends readonly unknown[]
    ? // Arrays and tuples element by element (their keys are also the array methods).
      R extends readonly unknown[]
      ? { [K in keyof C]: K extends keyof R ? CarryCheck<Op, C[K], R[K]> : CarryMessage<Op, `no [${K & string}]`, `a tree with [${K & string}]`> }[number]
      : CarryMessage<Op, Print<R>, "an array">
  : R extends object
    ?
        | { [K in keyof C]-?: K extends keyof R ? CarryCheck<Op, C[K], R[K]> : CarryMessage<Op, `no ${K & string}`, `a tree with ${K & string}`> }[keyof C]
        | { [K in Exclude<keyof R, keyof C>]: CarryMessage<Op, `a tree with ${K & string}`, `a tree without ${K & string}`> }[Exclude<keyof R, keyof C>]
    : CarryMessage<Op, Print<R>, "a tree">;
type CarryMessage<Op extends string, Got extends string, Want extends string> = Message<
  "FT208",
  { what: `${Op}() body`; got: Got; want: `a carry of ${Want}`; why: "the carry must keep its type" }
>;

/**
 * The carry after a loop, leaf by leaf as tracing has it: private where the step's result
 * (R) is, or where the initial carry (C) was.
 */
export type CarryAfter<C, R> = [Extract<PlacementsOf<R>, PrivatePlacement>] extends [never] ? C : LeafwiseTaint<C, R>;
type LeafwiseTaint<C, R> = IsAny<C> extends true
  ? C
  : C extends Typed
    ? Tainted<C, R>
    : { -readonly [K in keyof C]: LeafwiseTaint<C[K], K extends keyof R ? R[K] : never> };

/**
 * The loop index fori's body receives: a local int32 scalar, 0 to count-1.
 *
 * @example
 * program({ w: atServer(f32([3])) }, ({ w }) => fori(3, w, (i: LoopIndex, acc) => add(acc, cast(i, "float32"))));
 */
export type LoopIndex = Tensor<[], "int32", "local">;

/**
 * FT302, as tracing says it, for an initial carry that is no tree of tensors (a plain number
 * such as 0: the carry is then `zeros([])`). The loop is then typed as `any` (Carry), so that
 * the body and the result raise nothing more: one mistake, one diagnostic.
 */
type InitCheck<Op extends string, C> = IsAny<C> extends true
  ? never
  : C extends TreeLike
    ? never
    : Message<"FT302", { what: `${Op}() initial carry`; why: `expected a tree (records and arrays) of traced tensors, got ${C extends number ? "a number" : "no tree"}` }>;
/** The carry's type: C, or `any` when the initial carry failed InitCheck. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see InitCheck
type Carry<C> = C extends TreeLike ? C : any;

/**
 * Runs body count times: carry = body(i, carry) for i = 0 .. count-1.
 *
 * @placement the carry keeps its placement through the loop (a body that changes it is FT208); the
 * index is local.
 * @example
 * program({ w: atServer(f32([3])) }, ({ w }) => fori(5, w, (_i, acc) => mul(acc, 0.5))); // w / 32
 */
export function fori<C, R>(
  count: number,
  init: Validate<C, InitCheck<"fori", C>>,
  body: (i: LoopIndex, carry: Carry<C>) => Validate<R, CarryCheck<"fori", Carry<C>, R>>,
): CarryAfter<Carry<C>, R> {
  const op = "fori";
  expectFunction(body, "fori() body");
  if (!Number.isInteger(count) || count < 0) throw ftError("FT305", { option: "fori count", why: `must be an integer >= 0, got ${count}` });
  const index = currentGraph(op).emit("iota", [], { length: count }, op)[0]!;
  const [carry] = loop(op, init, [index], count, (c, [i]) => [(body as (i: unknown, c: unknown) => unknown)(i, c), undefined]);
  return carry as never;
}

/** A tree with the leading dim of every leaf removed: one step of scan's xs. */
export type Step<X> = X extends Tensor<readonly [Dim, ...infer S extends Shape], infer D, infer P>
  ? Tensor<S, D, P>
  : { -readonly [K in keyof X]: Step<X[K]> };
/** A tree with N prepended to every leaf's shape: scan's stacked outputs. */
export type Stacked<Y, N extends Dim> = Y extends Tensor<infer S, infer D, infer P>
  ? Tensor<[N, ...S], D, P>
  : Y extends undefined | null
    ? Y
    : { -readonly [K in keyof Y]: Stacked<Y[K], N> };
type LeadingDim<X> = LeafTypes<X> extends infer L ? (ShapeOf<L> extends readonly [infer N extends Dim, ...Dim[]] ? N : number) : number;

/**
 * Runs body over the leading axis of xs (a tree), threading a carry:
 * `[carry, y_t] = body(carry, xs[t])`; returns the final carry and the y_t stacked.
 * @placement the carry keeps its placement (FT208 otherwise); xs is stepped along its leading axis
 * at its own placement; the stacked ys keep the body's placement.
 */
export function scan<C, X extends TreeLike, R, Y = undefined>(
  init: Validate<C, InitCheck<"scan", C>>,
  xs: X,
  body: (carry: Carry<C>, x: Step<X>) => readonly [Validate<R, CarryCheck<"scan", Carry<C>, R>>, Y],
  // A step's output may be computed from the carry, which is private from the step on which
  // private data entered it: the stacked outputs are as private as the carry.
): C extends TreeLike ? [CarryAfter<C, R>, Stacked<Tainted<Y, R>, LeadingDim<X>>] : Carry<C> {
  const op = "scan";
  expectFunction(body, "scan() body");
  const flatXs = flattenTracers(xs, "scan() xs");
  let length: DimValue = null;
  flatXs.leaves.forEach((t, i) => {
    if (t.shape.length === 0) throw ftError("FT204", { op, axis: 0, a: t.toString(), rank: 0 });
    const lead = t.shape[0]!;
    if (i === 0) length = lead;
    else if (lead !== null && length !== null && lead !== length) {
      throw ftError("FT210", { what: `scan() xs at ${flatXs.paths[i] || "the root"}`, dim: 0, got: String(lead), want: String(length) });
    }
  });
  const result = loop(op, init, flatXs.leaves, length, (c, steps) =>
    (body as (c: unknown, x: unknown) => readonly [unknown, unknown])(c, unflatten(flatXs.def, steps)),
  );
  return result as never;
}

/**
 * Traces a loop body as a `scan` node: body inputs are [carry..., one step of each xs leaf...],
 * outputs [carry..., y...]; the node returns [final carry..., stacked y...].
 */
function loop(
  op: string,
  init: unknown,
  xs: readonly Tracer[],
  length: DimValue,
  body: (carry: unknown, steps: Tracer[]) => readonly [unknown, unknown],
): [unknown, unknown] {
  const carry = flattenTracers(init, `${op}() initial carry`);
  const stepTypes: ValueType[] = xs.map((t) => ({ ...t.type, shape: t.shape.slice(1) }));
  let yDef: TreeDef | undefined;
  const traceWith = (carryTypes: readonly ValueType[]) =>
    traceBody(op, [...carryTypes, ...stepTypes], (ins) => {
      const [next, ys] = body(unflatten(carry.def, ins.slice(0, carry.leaves.length)), ins.slice(carry.leaves.length));
      const nextFlat = flattenTracers(next, `${op}() body carry`);
      checkCarry(`${op}() body`, "carry", nextFlat, carry);
      if (ys === undefined || ys === null) return nextFlat.leaves;
      const yFlat = flattenTracers(ys, `${op}() body output`);
      yDef = yFlat.def;
      return [...nextFlat.leaves, ...yFlat.leaves];
    }, { origins: carry.leaves });
  // The privacy of the carry is a fixed point (src/ir/privacy.ts): a carry that a step makes
  // private is private in every later step, so the body is traced again with it private (at
  // most once per carry leaf), and what the body does with it is checked as such (FT109).
  // What the body records on its first tracing (the keys its releases use) is forgotten.
  const values = currentGraph(op).values;
  const recorded = values.releases.snapshot();
  let carryTypes = carry.leaves.map((t) => t.type);
  let traced = traceWith(carryTypes);
  for (;;) {
    const outTypes = traced.graph.outputs.slice(0, carryTypes.length).map((id) => values.types[id]!);
    if (outTypes.every((t, i) => t.private !== true || carryTypes[i]!.private === true)) break;
    carryTypes = carryTypes.map((t, i) => (outTypes[i]!.private === true ? { ...t, private: true as const } : t));
    values.releases.restore(recorded);
    traced = traceWith(carryTypes);
  }
  const outs = currentGraph(op).emit("scan", [...carry.leaves, ...xs], { carries: carry.leaves.length, length }, op, [traced]);
  const finalCarry = unflatten(carry.def, outs.slice(0, carry.leaves.length));
  return [finalCarry, yDef === undefined ? undefined : unflatten(yDef, outs.slice(carry.leaves.length))];
}
