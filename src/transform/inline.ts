/**
 * Re-recording IR into the graph being traced: transformations replay a closed graph's nodes
 * with new inputs (to inline a differentiated function, or to build a modified loop body).
 * Bodies are re-traced too, so every value the replay defines gets a fresh id.
 */
import { currentGraph, traceBody, type Tracer } from "../front/trace.js";
import { primitives } from "../ir/primitives.js";
import type { Graph, Node } from "../ir/types.js";

/** How a replay may change nodes; by default each is recorded again as it was. */
export interface Replay {
  /** The node's attributes in the new graph (specialize() substitutes bound dims). */
  attrs?(node: Node): Node["attrs"];
  /** Records the node some other way (simplify() aliases no-ops), or undefined to keep it. */
  node?(node: Node, inputs: readonly Tracer[], attrs: Node["attrs"]): Tracer[] | undefined;
}

/** Records graph's nodes with `inputs` bound to its inputs; returns its outputs. */
export function inline(graph: Graph, inputs: readonly Tracer[], replay: Replay = {}): Tracer[] {
  const env = new Map<number, Tracer>();
  graph.inputs.forEach((id, i) => env.set(id, inputs[i]!));
  for (const node of graph.nodes) {
    const outs = reemit(node, node.inputs.map((id) => env.get(id)!), replay);
    node.outputs.forEach((id, i) => env.set(id, outs[i]!));
  }
  return graph.outputs.map((id) => env.get(id)!);
}

/** Splits a node's inputs into its operands and, per body, the values it captures. */
export function splitCaptures<T>(node: Node, inputs: readonly T[]): { operands: T[]; captured: T[][] } {
  const counts = (node.bodies ?? []).map((_, k) => node.captures?.[k] ?? 0);
  let offset = inputs.length - counts.reduce((a, b) => a + b, 0);
  const operands = inputs.slice(0, offset);
  const captured = counts.map((n) => inputs.slice(offset, (offset += n)));
  return { operands, captured };
}

/** Records one node again, with the given input tracers (its bodies re-traced). */
export function reemit(node: Node, inputs: readonly Tracer[], replay: Replay = {}): Tracer[] {
  const graph = currentGraph(node.op);
  const attrs = replay.attrs?.(node) ?? node.attrs;
  const replaced = replay.node?.(node, inputs, attrs);
  if (replaced !== undefined) return replaced;
  if (node.bodies === undefined) return graph.emit(node.op, inputs, attrs, node.op);
  const { operands, captured } = splitCaptures(node, inputs);
  // Parameter types follow from the new operands (they may be more specific than before).
  const paramTypes = primitives[node.op]!.bodyParams!(operands.map((t) => t.type), attrs);
  const bodies = node.bodies.map((body, k) =>
    traceBody(node.op, paramTypes[k]!, (ins) => inline(body, [...ins, ...captured[k]!], replay)),
  );
  return graph.emit(node.op, operands, attrs, node.op, bodies);
}
