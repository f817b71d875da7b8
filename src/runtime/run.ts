/**
 * Running a program: bind the inputs, specialise the IR to their dims, batch it over the
 * clients, lower it to the active backend's kernels, execute. Compiled forms are cached per
 * program, backend and input shapes, so a training loop compiles once.
 */
import * as tf from "@tensorflow/tfjs";
import { unflatten } from "../front/tree.js";
import type { Graph, ProgramIR, ValueType } from "../ir/types.js";
import { tfjsRules } from "../lower/tfjs-rules.js";
import { batchProgram, type BatchPolicy } from "../transform/batch.js";
import { simplify } from "../transform/simplify.js";
import { specialize } from "../transform/specialize.js";
import { activateBackend, requestedBackend, type BackendName } from "./backend.js";
import { bindInputs } from "./inputs.js";
import { tfjsLowering, type Executable, type Lowering } from "./lowering.js";

/** The lowering of each backend: TensorFlow.js kernels for all of them. */
function loweringFor(backend: BackendName): Lowering {
  return tfjsLowering(backend);
}

export interface RunOptions {
  /** wasm (default), cpu or tensorflow; else FEDTENSOR_BACKEND. */
  readonly backend?: string;
  /** The cohort size, for programs with no CLIENTS input. */
  readonly clients?: number;
}

/** Compiled forms kept per program; the oldest is dropped (and its constants freed) past this. */
const CACHE_SIZE = 8;
const cache = new WeakMap<ProgramIR, Map<string, Executable>>();
/**
 * tfjs tensors are not garbage-collected: when a program is, its compiled forms' constants are
 * freed here (and at once by Program.dispose()).
 */
const constantsOfCollected = new FinalizationRegistry<Map<string, Executable>>((forProgram) => disposeAll(forProgram));

function disposeAll(forProgram: Map<string, Executable>): void {
  for (const compiled of forProgram.values()) compiled.dispose();
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

function compile(ir: ProgramIR, types: readonly ValueType[], bindings: ReadonlyMap<string, number>, clients: number, lowering: Lowering): Executable {
  const concrete = simplify(specialize(ir, types, bindings));
  const batched = batchProgram(concrete, clients, lowering.policy);
  return lowering.compile(simplify(batched.ir));
}

function cached(ir: ProgramIR, key: string, make: () => Executable): Executable {
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
      const [oldestKey, oldest] = forProgram.entries().next().value as [string, Executable];
      oldest.dispose();
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
    const executable = cached(ir, key, () => compile(ir, bound.types, bound.bindings, bound.clients, loweringFor(backend)));
    return unflatten(ir.outputTree, await executable.run(bound.tensors));
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
