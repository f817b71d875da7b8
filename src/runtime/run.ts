/**
 * Running a program: bind the inputs, specialise the IR to their dims, batch it over the
 * clients, lower it to the active backend's kernels, execute. Compiled forms are cached per
 * program, backend and input shapes, so a training loop compiles once.
 */
import * as tf from "@tensorflow/tfjs";
import { unflatten } from "../front/tree.js";
import type { Graph, ProgramIR, ValueType } from "../ir/types.js";
import { CompiledGraph, type LoweringContext } from "../lower/executable.js";
import { tfjsRules } from "../lower/tfjs-rules.js";
import { batchProgram, type BatchPolicy } from "../transform/batch.js";
import { simplify } from "../transform/simplify.js";
import { specialize } from "../transform/specialize.js";
import { activateBackend, requestedBackend, type BackendName } from "./backend.js";
import { bindInputs } from "./inputs.js";

export interface RunOptions {
  /** wasm (default), cpu or tensorflow; else FEDTENSOR_BACKEND. */
  readonly backend?: string;
  /** The cohort size, for programs with no CLIENTS input. */
  readonly clients?: number;
}

interface Compiled {
  readonly graph: CompiledGraph;
}

/** Compiled forms kept per program; the oldest is dropped (and its constants freed) past this. */
const CACHE_SIZE = 8;
const cache = new WeakMap<ProgramIR, Map<string, Compiled>>();
/**
 * tfjs tensors are not garbage-collected: when a program is, its compiled forms' constants are
 * freed here (and at once by Program.dispose()).
 */
const constantsOfCollected = new FinalizationRegistry<Map<string, Compiled>>((forProgram) => disposeAll(forProgram));

function disposeAll(forProgram: Map<string, Compiled>): void {
  for (const compiled of forProgram.values()) compiled.graph.dispose();
  forProgram.clear();
}

/** Frees a program's compiled forms; the next run compiles again. */
export function releaseCompiled(ir: ProgramIR): void {
  const forProgram = cache.get(ir);
  if (forProgram === undefined) return;
  disposeAll(forProgram);
  cache.delete(ir);
  constantsOfCollected.unregister(forProgram);
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
 * tfjs wasm and cpu run one 2-D matmul fast but batched ones as slow loops: a map whose
 * function multiplies per-client values with per-client weights runs once per client there.
 * Native TensorFlow batches well.
 */
function policyFor(backend: BackendName): BatchPolicy {
  return {
    acceptBatchedMap: (body, isBatched) => backend === "tensorflow" || !usesPerClientOps(body, isBatched),
  };
}

function compile(ir: ProgramIR, types: readonly ValueType[], bindings: ReadonlyMap<string, number>, clients: number, backend: BackendName): Compiled {
  const concrete = simplify(specialize(ir, types, bindings));
  const batched = batchProgram(concrete, clients, policyFor(backend));
  const program = simplify(batched.ir);
  const ctx: LoweringContext = {
    backend,
    types: program.values,
    compile: (graph) => new CompiledGraph(graph, tfjsRules, ctx),
  };
  return { graph: new CompiledGraph(program.graph, tfjsRules, ctx) };
}

function cached(ir: ProgramIR, key: string, make: () => Compiled): Compiled {
  let forProgram = cache.get(ir);
  if (forProgram === undefined) {
    cache.set(ir, (forProgram = new Map()));
    constantsOfCollected.register(ir, forProgram, forProgram);
  }
  let entry = forProgram.get(key);
  if (entry === undefined) {
    entry = make();
    forProgram.set(key, entry);
    if (forProgram.size > CACHE_SIZE) {
      const [oldestKey, oldest] = forProgram.entries().next().value as [string, Compiled];
      oldest.graph.dispose();
      forProgram.delete(oldestKey);
    }
  }
  return entry;
}

/** Runs a program; returns its outputs as a tree of tfjs tensors that the caller owns. */
export async function runProgram(ir: ProgramIR, inputs: unknown, options: RunOptions = {}): Promise<unknown> {
  const backend = await activateBackend(requestedBackend(options.backend));
  const bound = bindInputs(ir, inputs, options.clients);
  try {
    const key = JSON.stringify([backend, bound.clients, bound.types.map((t) => t.shape)]);
    const compiled = cached(ir, key, () => compile(ir, bound.types, bound.bindings, bound.clients, backend));
    return unflatten(ir.outputTree, compiled.graph.run(bound.tensors));
  } finally {
    bound.created.forEach((t) => t.dispose());
  }
}

/** Disposes every tensor of an output tree. */
export function disposeTree(tree: unknown): void {
  if (tree instanceof tf.Tensor) tree.dispose();
  else if (Array.isArray(tree)) tree.forEach(disposeTree);
  else if (tree !== null && typeof tree === "object") Object.values(tree).forEach(disposeTree);
}
