/**
 * Loading a program from its JSON IR. The IR is checked, not trusted: its form, and every
 * node re-typed by the primitive rules from the declared input types, which must reproduce
 * the stored types. A stored program runs exactly like the one that was traced.
 */
import { FedTensorError, ftError } from "../errors/error.js";
import type { Graph, ProgramIR, TreeDef, ValueType } from "../ir/types.js";
import { leafPaths } from "../ir/tree-paths.js";
import { inline } from "../transform/inline.js";
import { Program } from "./program.js";
import { GraphBuilder, recordInto, ValueTable } from "./trace.js";

const bad = (why: string) => ftError("FT302", { what: "program IR", why });

function checkShape(json: unknown): asserts json is ProgramIR {
  const ir = json as Partial<ProgramIR> | null;
  if (ir === null || typeof ir !== "object") throw bad("expected a JSON object");
  if (ir.format !== "fedtensor-ir") throw bad(`format is ${JSON.stringify(ir.format)}, expected "fedtensor-ir"`);
  if (ir.version !== 1) throw bad(`version ${JSON.stringify(ir.version)} is not supported (this is version 1)`);
  if (!Array.isArray(ir.values) || typeof ir.graph !== "object" || ir.graph === null) throw bad("values or graph missing");
  const graphs: Graph[] = [ir.graph];
  while (graphs.length > 0) {
    const g = graphs.pop()!;
    if (!Array.isArray(g.inputs) || !Array.isArray(g.nodes) || !Array.isArray(g.outputs)) throw bad("a graph lacks inputs, nodes or outputs");
    for (const node of g.nodes) {
      if (typeof node.op !== "string" || !Array.isArray(node.inputs) || !Array.isArray(node.outputs)) throw bad("a node lacks op, inputs or outputs");
      graphs.push(...(node.bodies ?? []));
    }
  }
}

const sameType = (a: ValueType, b: ValueType) =>
  a.dtype === b.dtype && a.placement === b.placement && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);

/**
 * A Program from JSON (a string or a parsed object), after checking it.
 *
 * @placement the placements the program's IR declares.
 * @example
 * const p = program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(x));
 * const again = loadProgram(JSON.stringify(p.ir));
 * again.signature === p.signature; // true
 */
export function loadProgram(json: string | unknown): Program {
  let ir: unknown;
  try {
    ir = typeof json === "string" ? JSON.parse(json) : json;
  } catch (error) {
    throw bad(`not JSON: ${(error as Error).message}`);
  }
  checkShape(ir);
  const values = new ValueTable();
  const root = new GraphBuilder(values, undefined);
  let outputs;
  try {
    outputs = recordInto(root, () => {
      const inputs = ir.graph.inputs.map((id) => {
        const type = ir.values[id];
        if (type === undefined) throw bad(`input value ${id} has no type`);
        return root.addInput(type);
      });
      return inline(ir.graph, inputs);
    });
  } catch (error) {
    if (error instanceof FedTensorError) throw error;
    throw bad((error as Error).message);
  }
  outputs.forEach((t, i) => {
    const stored = ir.values[ir.graph.outputs[i]!];
    if (stored === undefined || !sameType(stored, t.type)) {
      throw bad(`output ${i} is stored as ${JSON.stringify(stored)} but its nodes compute ${JSON.stringify(t.type)}`);
    }
  });
  const checkTree = (def: TreeDef, count: number, what: string): void => {
    const leaves: number[] = [];
    const walk = (d: TreeDef): void => {
      if (typeof d === "number") leaves.push(d);
      else (Array.isArray(d) ? d : Object.values(d as Record<string, TreeDef>)).forEach(walk);
    };
    walk(def);
    if (leaves.length !== count || leaves.some((l, i) => !leaves.includes(i))) throw bad(`${what} does not match the graph`);
  };
  checkTree(ir.inputTree, ir.graph.inputs.length, "inputTree");
  checkTree(ir.outputTree, ir.graph.outputs.length, "outputTree");
  checkClientState(ir);
  return new Program(ir);
}

/** Client state names CLIENTS outputs only: a SERVER output is no client's to keep. */
function checkClientState(ir: ProgramIR): void {
  if (ir.clientState === undefined) return;
  if (!Array.isArray(ir.clientState)) throw bad("clientState is not a list of output paths");
  const paths = leafPaths(ir.outputTree);
  for (const path of ir.clientState) {
    const at = paths.indexOf(path);
    if (at < 0) throw bad(`clientState names ${JSON.stringify(path)}, which is no output`);
    if (ir.values[ir.graph.outputs[at]!]?.placement !== "clients") throw bad(`clientState names ${JSON.stringify(path)}, which is not at the CLIENTS`);
  }
}
