/**
 * Running a program: bind the inputs, specialise the IR to their dims, batch it over the
 * clients, lower it to the active backend's kernels, execute. Compiled forms are cached per
 * program, backend and input shapes, so a training loop compiles once.
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../errors/error.js";
import { unflatten } from "../front/tree.js";
import type { ProgramIR, ValueType } from "../ir/types.js";
import { batchProgram } from "../transform/batch.js";
import { simplify } from "../transform/simplify.js";
import { specialize } from "../transform/specialize.js";
import { activateBackend, requestedBackend, requestedProvider, runFailure, type BackendName } from "./backend.js";
import { withDeviceErrors } from "./webgpu.js";
import { bindInputs } from "./inputs.js";
import type { Executable, Lowering } from "./executable.js";
import { loweringFor } from "./lowering.js";
import { defaultWorkers } from "./worker-pool.js";

/**
 * program.run()'s options: the backend and its execution provider, worker threads, the cohort size
 * of a program without CLIENTS inputs, and the other settings below.
 *
 * @example
 * const p = program({ x: atClients(f32([2])) }, ({ x }) => reduceSum(x));
 * await p.run({ x: [[1, 2], [3, 4]] }, { backend: "cpu" } satisfies RunOptions);
 */
export interface RunOptions {
  /** onnx (default), wasm, cpu or tensorflow; else FEDTENSOR_BACKEND. */
  readonly backend?: string;
  /** The onnx backend's execution provider: cpu (default) or cuda; else FEDTENSOR_EXECUTION_PROVIDER. */
  readonly executionProvider?: string;
  /**
   * Worker threads that share the clients of local training with this thread (onnx and wasm):
   * by default one per core besides this thread's; 0 runs everything on this thread.
   */
  readonly workers?: number;
  /** The cohort size, for programs with no CLIENTS input. */
  readonly clients?: number;
}

/**
 * Compiled forms kept per program; the oldest is dropped (and its constants freed) past this.
 * A streamed round's `work` part has one form per size bucket and chunk size (a bucket's last
 * chunk is smaller): a dozen on a skewed Dirichlet split, which must not recompile every round.
 */
const CACHE_SIZE = 32;
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

/** Backends whose client loops run faster across worker threads (bench/fedavg-round.ts); onnx only on its CPU provider. */
const sharded: readonly BackendName[] = ["onnx", "wasm"];

function workersFor(backend: BackendName, provider: string | undefined, option: number | undefined): number {
  if (option !== undefined && (!Number.isInteger(option) || option < 0)) throw ftError("FT305", { option: "workers", why: `expected a whole number of worker threads, got ${option}` });
  return sharded.includes(backend) && (provider ?? "cpu") === "cpu" ? (option ?? defaultWorkers()) : 0;
}

/** Runs a program; returns its outputs as a tree of tfjs tensors that the caller owns. */
export async function runProgram(ir: ProgramIR, inputs: unknown, options: RunOptions = {}): Promise<unknown> {
  const requested = requestedBackend(options.backend);
  const provider = requestedProvider(requested, options.executionProvider);
  const backend = await activateBackend(requested, provider);
  const bound = bindInputs(ir, inputs, options.clients);
  try {
    const workers = workersFor(backend, provider, options.workers);
    const key = JSON.stringify([backend, provider, workers, bound.clients, bound.types.map((t) => t.shape)]);
    const executable = cached(ir, key, () => compile(ir, bound.types, bound.bindings, bound.clients, loweringFor(backend, provider, workers)));
    const run = () => executable.run(bound.tensors);
    const outputs = backend === "webgpu" ? await withDeviceErrors(run, (made) => tf.dispose(made)) : await run();
    return unflatten(ir.outputTree, outputs);
  } catch (error) {
    throw runFailure(backend, error);
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
