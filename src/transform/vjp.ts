/**
 * Reverse-mode differentiation as an IR-to-IR transformation (SPEC section 5).
 *
 * vjp() replays a closed graph into the graph being traced (the forward pass), then walks its
 * nodes backwards applying each primitive's rule from vjp-rules.ts, which emits the cotangent
 * computation as ordinary IR. Only nodes that depend on the differentiated inputs ("active")
 * are transposed. The result is plain IR, so it lowers to any backend, and differentiating it
 * again gives higher-order gradients.
 */
import { ftError } from "../errors/error.js";
import type { Tracer } from "../front/trace.js";
import type { Graph, Node, ValueType } from "../ir/types.js";
import { add, fillLike } from "./emit.js";
import { reemit } from "./inline.js";
import { vjpRules } from "./vjp-rules.js";
import type { OutputCotangents, VjpContext, VjpResult } from "./vjp-types.js";

export type { OutputCotangents, VjpResult } from "./vjp-types.js";

/** Which values of a graph depend on the inputs marked in `wrt`. */
function activeValues(graph: Graph, wrt: readonly boolean[]): Set<number> {
  const active = new Set<number>(graph.inputs.filter((_, i) => wrt[i]));
  for (const node of graph.nodes) {
    if (node.inputs.some((id) => active.has(id))) for (const id of node.outputs) active.add(id);
  }
  return active;
}

/**
 * Differentiates `graph` at `inputs` with respect to the inputs marked in `wrt`, pulling back
 * `outputCotangents` (undefined entries count as zero).
 */
export function vjp(
  graph: Graph,
  types: readonly ValueType[],
  inputs: readonly Tracer[],
  wrt: readonly boolean[],
  outputCotangents: OutputCotangents,
): VjpResult {
  const primal = new Map<number, Tracer>();
  graph.inputs.forEach((id, i) => primal.set(id, inputs[i]!));
  for (const node of graph.nodes) {
    const outs = reemit(node, node.inputs.map((id) => primal.get(id)!));
    node.outputs.forEach((id, i) => primal.set(id, outs[i]!));
  }

  const active = activeValues(graph, wrt);
  const cotangent = new Map<number, Tracer>();
  // Only float32 values carry cotangents: int32 and bool values are piecewise constant.
  const accumulate = (id: number, ct: Tracer | undefined): void => {
    if (ct === undefined || !active.has(id) || types[id]!.dtype !== "float32") return;
    const previous = cotangent.get(id);
    cotangent.set(id, previous === undefined ? ct : add(previous, ct));
  };
  const outputs = graph.outputs.map((id) => primal.get(id)!);
  const seeds = typeof outputCotangents === "function" ? outputCotangents(outputs) : outputCotangents;
  graph.outputs.forEach((id, i) => accumulate(id, seeds[i]));

  for (const node of [...graph.nodes].reverse()) {
    if (!node.outputs.some((id) => cotangent.has(id))) continue;
    const outs = node.outputs.map((id) => primal.get(id)!);
    const context: VjpContext = {
      node,
      types,
      inputs: node.inputs.map((id) => primal.get(id)!),
      outputs: outs,
      active: node.inputs.map((id) => active.has(id)),
      vjp,
    };
    const cts = node.outputs.map((id, i) => cotangent.get(id) ?? fillLike(0, outs[i]!));
    const inputCts = ruleFor(node)(context, cts);
    node.inputs.forEach((id, i) => accumulate(id, inputCts[i]));
  }
  return {
    outputs,
    inputCotangents: graph.inputs.map((id, i) => (wrt[i] ? cotangent.get(id) : undefined)),
  };
}

function ruleFor(node: Node) {
  const rule = vjpRules[node.op];
  if (rule === undefined) {
    throw ftError("FT211", { op: "grad", what: `${node.op}(), which has no gradient rule` });
  }
  return rule;
}
