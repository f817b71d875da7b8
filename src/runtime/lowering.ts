/**
 * What a backend contributes to running a program: whether it wants a map batched or run once
 * per client, and how a batched, simplified program becomes something that runs. Inputs and
 * outputs are tfjs tensors whatever runs them, so programs, the runtime and callers do not
 * change with the backend.
 */
import type * as tf from "@tensorflow/tfjs";
import type { Graph, ProgramIR } from "../ir/types.js";
import { CompiledGraph, type LoweringContext } from "../lower/executable.js";
import { tfjsRules } from "../lower/tfjs-rules.js";
import type { BatchPolicy } from "../transform/batch.js";

export interface Executable {
  /** Runs on the program's inputs; the inputs stay the caller's, the outputs become the caller's. */
  run(inputs: readonly tf.Tensor[]): Promise<tf.Tensor[]>;
  /** Frees what compiling made (constants, sessions). */
  dispose(): void;
}

export interface Lowering {
  readonly policy: BatchPolicy;
  compile(program: ProgramIR): Executable;
}

/** Ops whose operands must both vary per client for a backend to prefer one kernel per client. */
const perClientOps: Readonly<Record<string, readonly number[]>> = { matmul: [0, 1], conv2d: [1], conv2d_grad_input: [1], conv2d_grad_filter: [0, 1] };

function usesPerClientOps(graph: Graph, isBatched: (id: number) => boolean): boolean {
  return graph.nodes.some(
    (node) =>
      (perClientOps[node.op]?.every((i) => isBatched(node.inputs[i]!)) ?? false) ||
      (node.bodies ?? []).some((body) => usesPerClientOps(body, isBatched)),
  );
}

/**
 * TensorFlow.js kernels. tfjs wasm and cpu run one 2-D matmul fast but batched ones as slow
 * loops: a map whose function multiplies per-client values with per-client weights runs once
 * per client there. Native TensorFlow (`tensorflow`) batches well.
 */
export function tfjsLowering(backend: string): Lowering {
  return {
    policy: { acceptBatchedMap: (body, isBatched) => backend === "tensorflow" || !usesPerClientOps(body, isBatched) },
    compile(program) {
      const ctx: LoweringContext = {
        backend,
        types: program.values,
        compile: (graph) => new CompiledGraph(graph, tfjsRules, ctx),
      };
      const graph = new CompiledGraph(program.graph, tfjsRules, ctx);
      return { run: async (inputs) => graph.run(inputs), dispose: () => graph.dispose() };
    },
  };
}
