/**
 * Specialisation: the IR re-traced with every dim bound to a size, once a run's inputs are
 * known. Named dims ("B") and dims unknown until run time (null) become numbers, reshape's -1
 * is resolved, and every node is re-checked by its primitive rule, so shape errors that only
 * the data can reveal fail here with their FT code. Later stages (client batching, lowering)
 * then see concrete shapes only.
 */
import { ftError } from "../errors/error.js";
import { GraphBuilder, recordInto, ValueTable } from "../front/trace.js";
import type { DimValue, Node, ProgramIR, ValueType } from "../ir/types.js";
import { inline } from "./inline.js";

/** The name under which a run binds the number of clients in the cohort. */
export const CLIENTS_DIM = "#clients";

function bindDim(dim: DimValue, bindings: ReadonlyMap<string, number>, where: string): DimValue {
  if (typeof dim !== "string") return dim;
  const size = bindings.get(dim);
  if (size === undefined) {
    throw ftError("FT210", { what: where, dim, got: "unbound", want: "a size given by some program input" });
  }
  return size;
}

/** Substitutes bound sizes for named dims in the shape attributes of reshape, fill and random_bits. */
function bindAttrs(bindings: ReadonlyMap<string, number>) {
  return (node: Node): Node["attrs"] => {
    if ((node.op !== "reshape" && node.op !== "fill" && node.op !== "random_bits") || !Array.isArray(node.attrs.shape)) return node.attrs;
    const shape = (node.attrs.shape as DimValue[]).map((d) => bindDim(d, bindings, `${node.op}() shape`));
    return { ...node.attrs, shape };
  };
}

/** The program with concrete input types (from the run's data) and every dim bound. */
export function specialize(ir: ProgramIR, inputTypes: readonly ValueType[], bindings: ReadonlyMap<string, number>): ProgramIR {
  const values = new ValueTable();
  const root = new GraphBuilder(values, undefined);
  const outputs = recordInto(root, () => {
    const inputs = inputTypes.map((t) => root.addInput(t));
    return inline(ir.graph, inputs, { attrs: bindAttrs(bindings) });
  });
  for (const t of outputs) {
    if (t.shape.some((d) => typeof d !== "number")) {
      throw new Error(`internal: specialisation left an unbound dim in ${t.toString()}`);
    }
  }
  return { ...ir, values: values.types, graph: root.finish(outputs) };
}
