/**
 * What a backend contributes to running a program: whether it wants a map batched or run once
 * per client, and how a batched, simplified program becomes something that runs. Inputs and
 * outputs are tfjs tensors whatever runs them, so programs, the runtime and callers do not
 * change with the backend.
 */
import type { Graph } from "../ir/types.js";
import { CompiledGraph, type LoweringContext } from "../lower/executable.js";
import { OnnxExecutable, type SessionSettings } from "../lower/onnx/session.js";
import { tfjsRules } from "../lower/tfjs-rules.js";
import type { BackendName } from "./backend.js";
import type { Executable, Lowering } from "./executable.js";
import { shardedLowering } from "./shards.js";

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
      const ctx: Omit<LoweringContext, "own"> = {
        backend,
        types: program.values,
        compile: (graph) => new CompiledGraph(graph, tfjsRules, ctx),
      };
      const graph = new CompiledGraph(program.graph, tfjsRules, ctx);
      return { run: async (inputs) => graph.run(inputs), dispose: () => graph.dispose() };
    },
  };
}

/**
 * One ONNX graph per program, run by onnxruntime. On the CPU, local training (per-client
 * weights times per-client data) runs as a Loop over clients on plain 2-D products, where the
 * SGD update folds into Gemm: 62 ms per FedAvg round against 90 ms batched (bench/fedavg-round.ts's
 * cohort, one thread); maps of shared weights stay batched, one kernel for all clients. A GPU
 * provider gets every map batched: its kernels want large batches, not a loop of small products.
 */
export function onnxLowering(settings: SessionSettings): Lowering {
  const onCpu = settings.executionProvider === "cpu";
  return {
    policy: { acceptBatchedMap: (body, isBatched) => !onCpu || !usesPerClientOps(body, isBatched) },
    compile: (program) => new OnnxExecutable(program, settings),
  };
}

/**
 * The lowering of the parts of a program that shares its clients out between threads, and of
 * each thread's slice of them: onnxruntime on one thread, as the other threads have the other cores.
 */
export function sliceLowering(backend: BackendName, executionProvider: string | undefined): Lowering {
  return backend === "onnx" ? onnxLowering({ executionProvider: executionProvider!, threads: 1 }) : tfjsLowering(backend);
}

/**
 * The lowering of each backend: one ONNX graph for onnx, TensorFlow.js kernels for the others;
 * with workers, the client loops of a program are shared out between this thread and the workers.
 */
export function loweringFor(backend: BackendName, executionProvider: string | undefined, workers: number): Lowering {
  const whole = backend === "onnx" ? onnxLowering({ executionProvider: executionProvider! }) : tfjsLowering(backend);
  return workers === 0 ? whole : shardedLowering(whole, sliceLowering(backend, executionProvider), { backend, executionProvider, workers });
}
