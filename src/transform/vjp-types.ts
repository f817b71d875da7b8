/**
 * The shapes shared by vjp() and its rule tables. They live apart so that vjp.ts, the
 * per-primitive rules and the rules for primitives with bodies (which call vjp() again,
 * through their context) import this module rather than each other.
 */
import type { Tracer } from "../front/trace.js";
import type { Graph, Node, ValueType } from "../ir/types.js";

export interface VjpResult {
  /** The graph's outputs, recomputed in the current graph. */
  readonly outputs: Tracer[];
  /** Cotangents of the inputs; undefined where an input is not differentiated or gets none. */
  readonly inputCotangents: (Tracer | undefined)[];
}

/** Output cotangents, or a function making them from the replayed outputs (for a seed of ones). */
export type OutputCotangents = readonly (Tracer | undefined)[] | ((outputs: readonly Tracer[]) => readonly (Tracer | undefined)[]);

/** Reverse mode over a closed graph: see vjp() in vjp.ts. */
export type Vjp = (
  graph: Graph,
  types: readonly ValueType[],
  inputs: readonly Tracer[],
  wrt: readonly boolean[],
  outputCotangents: OutputCotangents,
) => VjpResult;

export interface VjpContext {
  readonly node: Node;
  readonly types: readonly ValueType[];
  readonly inputs: readonly Tracer[];
  readonly outputs: readonly Tracer[];
  readonly active: readonly boolean[];
  /** vjp() itself, for the rules of primitives with bodies (map, scan, aggregate). */
  readonly vjp: Vjp;
}

export type VjpRule = (ctx: VjpContext, cotangents: readonly Tracer[]) => (Tracer | undefined)[];
