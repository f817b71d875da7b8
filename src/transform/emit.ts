/**
 * Emitting primitives from transformations. Rules (gradients, batching) build new IR through
 * these helpers, which record into the graph being traced, so every node they add is typed
 * and checked by the same primitive table as user code.
 */
import type { Attrs } from "../ir/primitives.js";
import type { Graph, ValueType } from "../ir/types.js";
import { currentGraph, type ClosedBody, type Tracer } from "../front/trace.js";
import type { BatchContext } from "./batch-types.js";

/** Records one primitive with one output. */
export function prim(op: string, inputs: readonly Tracer[], attrs: Attrs = {}): Tracer {
  return currentGraph(op).emit(op, inputs, attrs, op)[0]!;
}

/** A member value copied to every client: [C, ...shape]. */
export function materialize(clients: number, t: Tracer): Tracer {
  const expanded = prim("expand_dims", [t], { axis: 0 });
  return prim("broadcast_to", [expanded], { shape: [clients, ...(t.shape as number[])] });
}

/** In a batching rule, the value of every client as one [C, ...] tensor: an all-equal value is materialized. */
export const materializeIn = (ctx: Pick<BatchContext, "clients" | "isBatched">, t: Tracer): Tracer => (ctx.isBatched(t) ? t : materialize(ctx.clients, t));

/** Records a primitive with several outputs (sort's values and positions). */
export function primOutputs(op: string, inputs: readonly Tracer[], attrs: Attrs = {}): Tracer[] {
  return currentGraph(op).emit(op, inputs, attrs, op);
}

/** Records a primitive with bodies and several outputs. */
export function primMany(op: string, inputs: readonly Tracer[], attrs: Attrs, bodies: readonly ClosedBody[]): Tracer[] {
  return currentGraph(op).emit(op, inputs, attrs, op, bodies);
}

export function scalar(value: number, like: Tracer): Tracer {
  return prim("constant", [], { value, dtype: like.dtype, shape: [] });
}

/** A value of like's type filled with `value` (placement included). */
export function fillLike(value: number, like: Tracer): Tracer {
  return prim("broadcast_like", [scalar(value, like), like]);
}

export const add = (a: Tracer, b: Tracer) => prim("add", [a, b]);
export const sub = (a: Tracer, b: Tracer) => prim("sub", [a, b]);
export const mul = (a: Tracer, b: Tracer) => prim("mul", [a, b]);
export const div = (a: Tracer, b: Tracer) => prim("div", [a, b]);
export const neg = (a: Tracer) => prim("neg", [a]);

/** Sums x down to like's shape (the transpose of broadcasting x to like). */
export const unbroadcast = (x: Tracer, like: Tracer, axes?: readonly number[]) =>
  prim("unbroadcast", [x, like], axes === undefined ? {} : { axes: [...axes] });
export const broadcastLike = (x: Tracer, like: Tracer, axes?: readonly number[]) =>
  prim("broadcast_like", [x, like], axes === undefined ? {} : { axes: [...axes] });

/** Axes of a reduction as non-negative numbers (all axes when attrs.axes is null). */
export function reducedAxes(attrs: Attrs, rank: number): number[] {
  const axes = attrs.axes === null || attrs.axes === undefined ? [...Array(rank).keys()] : (attrs.axes as number[]);
  return axes.map((a) => (a < 0 ? a + rank : a)).sort((a, b) => a - b);
}

/** The values of a graph's inputs, by position, as value types. */
export function inputTypes(graph: Graph, types: readonly ValueType[]): ValueType[] {
  return graph.inputs.map((id) => types[id]!);
}
