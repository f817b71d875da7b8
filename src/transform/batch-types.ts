/**
 * What a client-batching rule sees and returns: apart from the rule table (batch-rules.ts) so
 * that rule files kept elsewhere (robust-batch-rules.ts) need not import the table.
 */
import type { Tracer } from "../front/trace.js";
import type { Node, ValueType } from "../ir/types.js";

export interface BatchContext {
  readonly node: Node;
  readonly inputs: readonly Tracer[];
  /** The node's output types in the unbatched (specialised) program. */
  readonly outTypes: readonly ValueType[];
  readonly clients: number;
  isBatched(t: Tracer): boolean;
}

export type BatchRule = (ctx: BatchContext) => Tracer[];
