/**
 * A batched, specialised program as one ONNX model: every node lowered by its rule (rules.ts,
 * windows.ts, loops.ts) into one graph whose inputs and outputs are the program's, so that a
 * whole round, local training loops included, is one onnxruntime session call.
 */
import type { Graph, Node, ProgramIR, ValueType } from "../../ir/types.js";
import { ModelScope, OnnxGraph, valueInfo, type OnnxCheck } from "./graph.js";
import { loopRules } from "./loops.js";
import { foldingIntoGemm } from "./gemm.js";
import { encodeModel, type GraphProto } from "./proto.js";
import { tensorRules, type BodyInput, type CohortRow, type OnnxContext, type OnnxRule } from "./rules.js";
import { onnxRandomRules } from "./random.js";
import { onnxSecureRules } from "./secure.js";
import { windowRules } from "./windows.js";
import { sequenceRules } from "./sequence.js";

/** The ONNX lowering of every primitive left after client batching. */
export const onnxRules: Readonly<Record<string, OnnxRule>> = {
  ...tensorRules,
  add: foldingIntoGemm(1, tensorRules.add!),
  sub: foldingIntoGemm(-1, tensorRules.sub!),
  ...windowRules,
  ...sequenceRules,
  ...loopRules,
  ...onnxRandomRules,
  ...onnxSecureRules,
};

/** onnx 1.13's IR version, the first with opset 18. */
const IR_VERSION = 8;
const OPSET = 18;

/** A finished main graph (initializers included) as a model's bytes. */
export function modelBytes(graph: GraphProto): Uint8Array {
  return encodeModel({ ir_version: IR_VERSION, opset_import: [{ domain: "", version: OPSET }], producer_name: "fedtensor", graph });
}

/** Lowers `graph`'s nodes into `g`, its inputs bound to `inputs`; returns the names of its outputs. */
function lowerGraph(graph: Graph, g: OnnxGraph, types: readonly ValueType[], inputs: readonly BodyInput[]): string[] {
  const names = new Map<number, string>();
  const rows = new Map<number, CohortRow>();
  const producers = new Map<number, Node>();
  const uses = new Map<number, number>();
  const consumers = new Map<number, Node[]>();
  for (const id of [...graph.nodes.flatMap((n) => n.inputs), ...graph.outputs]) uses.set(id, (uses.get(id) ?? 0) + 1);
  for (const node of graph.nodes) for (const id of new Set(node.inputs)) consumers.set(id, [...(consumers.get(id) ?? []), node]);
  graph.inputs.forEach((id, i) => {
    const input = inputs[i]!;
    if (typeof input === "string") names.set(id, input);
    else rows.set(id, input);
  });
  const cx: OnnxContext = {
    g,
    types,
    name: (id) => {
      let name = names.get(id);
      const row = rows.get(id);
      if (name === undefined && row !== undefined) {
        // The first rule that needs the member whole: gathered here, once.
        name = g.op1("Gather", [row.cohort, row.index], { axis: 0 });
        names.set(id, name);
      }
      if (name === undefined) throw new Error(`internal: value ${id} used before it is lowered`);
      return name;
    },
    cohortRow: (id) => rows.get(id),
    producer: (id) => producers.get(id),
    uses: (id) => uses.get(id) ?? 0,
    consumers: (id) => consumers.get(id) ?? [],
    lowerBody: (body, into, bound) => lowerGraph(body, into, types, bound),
  };
  for (const node of graph.nodes) {
    const rule = onnxRules[node.op];
    if (rule === undefined) throw new Error(`internal: no onnx lowering for ${node.op}`);
    const outs = rule(node, cx);
    node.outputs.forEach((id, i) => {
      names.set(id, outs[i]!);
      producers.set(id, node);
    });
  }
  return graph.outputs.map(cx.name);
}

export interface OnnxModel {
  readonly bytes: Uint8Array;
  /** The main graph the bytes encode (which nodes the rules made). */
  readonly graph: GraphProto;
  /** Input names, in the order of the program's graph inputs. */
  readonly inputs: readonly string[];
  /** Output names, in the order of the program's graph outputs. */
  readonly outputs: readonly string[];
  /** Run-time checks, each an extra output after the program's (see OnnxCheck). */
  readonly checks: readonly (OnnxCheck & { readonly output: string })[];
}

/** How a model's interface differs from the program's (an exported inference model). */
export interface ModelInterface {
  /** Graph inputs, by position, that become initializers holding these values (a trained model's weights). */
  readonly constants?: ReadonlyMap<number, ArrayLike<number>>;
  /** Names of the remaining inputs, in order; `input<i>` otherwise. */
  readonly inputNames?: readonly string[];
  /** Names of the outputs, in order; the computing nodes' own names otherwise. */
  readonly outputNames?: readonly string[];
  /** A name for dim 0 of every input and output: a symbolic batch dim, for a graph that does not depend on it. */
  readonly batchDim?: string;
}

export function buildModel(program: ProgramIR, face: ModelInterface = {}): OnnxModel {
  const scope = new ModelScope();
  const g = new OnnxGraph(scope);
  const types = program.values;
  const typeOf = (id: number) => ({ type: types[id]!.dtype, shape: types[id]!.shape as number[] });
  const fixed = face.constants ?? new Map<number, ArrayLike<number>>();
  let free = 0;
  const inputs = program.graph.inputs.map((id, i) => {
    const values = fixed.get(i);
    return values === undefined ? (face.inputNames?.[free++] ?? `input${i}`) : scope.constant(typeOf(id).type, typeOf(id).shape, values);
  });
  const outs = lowerGraph(program.graph, g, types, inputs);
  const graph = g.finish(
    program.name,
    program.graph.inputs.flatMap((id, i) => (fixed.has(i) ? [] : [valueInfo(inputs[i]!, typeOf(id).type, typeOf(id).shape)])),
    [...program.graph.outputs.map((id, i) => ({ name: outs[i]!, ...typeOf(id) })), ...g.checks.map((c) => ({ name: c.value, type: "int64" as const, shape: [] }))],
  );
  face.outputNames?.forEach((name, i) => {
    // A last Identity gives the output its name; nothing after it reads the value.
    const output = graph.output[i]!;
    graph.node.push({ input: [output.name], output: [name], op_type: "Identity", attribute: [] });
    graph.output[i] = { ...output, name };
  });
  if (face.batchDim !== undefined) {
    for (const info of [...graph.input, ...graph.output]) info.type.tensor_type.shape.dim[0] = { dim_param: face.batchDim };
  }
  graph.initializer = scope.initializers;
  const outputs = graph.output.map((o) => o.name);
  const checks = g.checks.map((c, i) => ({ ...c, output: outputs[program.graph.outputs.length + i]! }));
  return { bytes: modelBytes(graph), graph, inputs: graph.input.map((o) => o.name), outputs: outputs.slice(0, program.graph.outputs.length), checks };
}
