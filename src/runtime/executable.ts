/**
 * What a backend's lowering makes of a program, in a module of its own so that the lowerings
 * (lowering.ts) and the threads that share a program's clients (shards.ts) both use it without
 * importing each other.
 */
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import type { ProgramIR } from "../ir/types.js";
import type { BatchPolicy } from "../transform/batch.js";

export interface Executable {
  /** Runs on the program's inputs; the inputs stay the caller's, the outputs become the caller's. */
  run(inputs: readonly TfTensor[]): Promise<TfTensor[]>;
  /** Frees what compiling made (constants, sessions). */
  dispose(): void;
}

export interface Lowering {
  readonly policy: BatchPolicy;
  compile(program: ProgramIR): Executable;
}
