/**
 * program(inputs, body): declares a federated program from its input specs and traces body
 * once into the IR. The result is the typed program: its IR, its TFF-style signature, and
 * (src/runtime) the means to run it.
 */
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import type { OutputCheck, Validate } from "../../types/placement.js";
import type { TensorSpec, TreeLike, Typed, ValueOf } from "../../types/tensor.js";
import type { InputLeaf } from "../runtime/inputs.js";
import type { RunOptions } from "../runtime/run.js";
import { FedTensorError, ftError } from "../errors/error.js";
import { pointAtUserCode } from "../errors/source-location.js";
import { aggregatorsOf, printAggregations } from "../ir/print-aggregations.js";
import { printSignature } from "../ir/print.js";
import { printReleases, secureSumNote } from "../ir/print-privacy.js";
import type { ProgramIR, TreeDef, ValueType } from "../ir/types.js";
import { checkReleaseInputs } from "../ir/privacy.js";
import { checkBudget, type ProgramBudgetOption } from "./budget.js";
import { isKept } from "./client-state.js";
import { checkOutputsPrivacy } from "./privacy.js";
import { flattenTracers } from "./placement.js";
import { isSpec, type Spec } from "./specs.js";
import { GraphBuilder, recordInto, ValueTable } from "./trace.js";
import { flatten, unflatten } from "./tree.js";
import { expectFunction } from "./values.js";

export type InputSpecs = { readonly [name: string]: TreeLike };

/** The static types a program was declared with: its input specs and its output values. */
export declare const programTypes: unique symbol;

/**
 * `program()`'s options: the name shown in signatures, logs and the IR.
 *
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceSum(x), { name: "sum_round" } satisfies ProgramOptions);
 */
export interface ProgramOptions {
  /** Shown in signatures and logs. */
  readonly name?: string;
  /**
   * What a training run of the program may spend: epsilon at delta over `rounds` runs, each
   * client in a run's cohort with probability `samplingRate` (docs/language.md "A program's
   * budget"). `fedtensor check` and the checker plugin report (FT362) a body whose releases with
   * number-literal options already spend more; `program.epsilon()` prices it. Invalid: FT363.
   */
  readonly budget?: ProgramBudgetOption;
}

/**
 * What program.epsilon() prices: any of the budget's numbers (the budget's where absent), and the accountant.
 *
 * @example
 * const query: ProgramEpsilonQuery = { samplingRate: 0.01, rounds: 100, delta: 1e-5, accountant: "pld" };
 */
export interface ProgramEpsilonQuery {
  readonly samplingRate?: number;
  readonly rounds?: number;
  readonly delta?: number;
  readonly accountant?: "pld" | "rdp";
}

/**
 * A traced program: its IR (`ir`), its TFF-style `signature`, its releases (`privacy`),
 * aggregations and aggregators, and `run(inputs, options)`, which runs it on a backend. Made by
 * `program(...)` or `loadProgram(json)`.
 *
 * @example
 * const p = program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(x), { name: "mean" });
 * console.log(p.name, p.signature); // mean (<x={f32[3]}@CLIENTS> -> f32[3]@SERVER)
 * const out = await p.run({ x: [[1, 2, 3], [3, 4, 5]] }); // two clients, on the leading axis: [2, 3, 4]
 */
export class Program<I = InputSpecs, O = unknown> {
  declare readonly [programTypes]: { readonly inputs: I; readonly output: O };

  constructor(
    readonly ir: ProgramIR,
    /** Its declared budget, when program() was given one. */
    readonly budget?: ProgramBudgetOption,
  ) {}

  get name(): string {
    return this.ir.name;
  }

  /**
   * The TFF-style type signature, e.g. `(<params=f32[10]@SERVER,x={f32[B,10]}@CLIENTS> -> f32[]@SERVER)`;
   * a program with a secure sum says that in one process its masks are a simulation.
   */
  get signature(): string {
    const note = secureSumNote(this.ir);
    return note === undefined ? signatureOf(this.ir) : `${signatureOf(this.ir)} ${note}`;
  }

  /**
   * Its releases (dpSum, secureSum), one line each: the mechanism, dpSum's clip and noise
   * multiplier and its cost per call as zCDP rho = 1 / (2 z^2), and how often it is called:
   * `dpSum #0: Gaussian mechanism, clip 1, noise multiplier 1.1, rho = 0.4132 zCDP per call, called once`.
   */
  get privacy(): string[] {
    return printReleases(this.ir);
  }

  /**
   * What its releases spend: epsilon at `delta` after `rounds` runs, each client in a run's
   * cohort with probability `samplingRate` (the budget's numbers where not given), by the PLD
   * accountant (`accountant: "rdp"` for the cross-check), with `withinBudget` when it has a
   * budget. The accountant lives in the library, loaded here on first use, as run() loads the runtime.
   */
  async epsilon(query: ProgramEpsilonQuery = {}): Promise<import("../lib/privacy/program-epsilon.js").ProgramSpent> {
    const { programEpsilon } = await import("../lib/privacy/program-epsilon.js");
    return programEpsilon(this, query);
  }

  /** Its aggregations as TFF intrinsics with their types, e.g. `federated_median: ({f32[10]}@CLIENTS -> f32[10]@SERVER)`. */
  get aggregations(): string[] {
    return printAggregations(this.ir);
  }

  /**
   * The aggregators that take its values to the SERVER (reduceSum, dpSum, ...), each once: what
   * `fedtensor ir --signature` prints under the signature. With private inputs, these are the
   * only ways their data leaves the clients (FT109).
   */
  get aggregators(): string[] {
    return aggregatorsOf(this.ir.graph);
  }

  /**
   * The paths of its outputs that are client state (keepOnClients): each client keeps its
   * member and is given it back as the input at the same path next round.
   */
  get clientState(): readonly string[] {
    return this.ir.clientState ?? [];
  }

  toJSON(): ProgramIR {
    return this.ir;
  }

  /**
   * Runs the program on TensorFlow.js (src/runtime): inputs as a tree like the declared one,
   * CLIENTS values with the clients on axis 0. Resolves to a tree of tensors the caller owns.
   */
  async run(inputs: RunInputs<I>, options?: RunOptions): Promise<RunOutputs<O>> {
    checkReleaseInputs(this.ir, inputs);
    const { runProgram } = await import("../runtime/run.js");
    return (await runProgram(this.ir, inputs, options)) as RunOutputs<O>;
  }

  /**
   * Frees the tensors that running the program compiled (its constants). A program that is
   * garbage-collected frees them too; this does it now. The program can still run afterwards.
   */
  async dispose(): Promise<void> {
    const { releaseCompiled } = await import("../runtime/run.js");
    releaseCompiled(this.ir);
  }
}

/** What run() takes for each declared input: a tfjs tensor, {shape, data}, a number or nested arrays. */
export type RunInputs<I> = I extends TensorSpec ? InputLeaf : { readonly [K in keyof I]: RunInputs<I[K]> };
/** What run() gives back for each output: a tfjs tensor (CLIENTS values with the clients on axis 0). */
export type RunOutputs<O> = O extends Typed ? TfTensor : { -readonly [K in keyof O]: RunOutputs<O[K]> };

/**
 * A program's TFF-style type signature from its IR, as `Program.signature` prints it:
 * `(<name=type,...> -> result)`.
 *
 * @placement none: a host function on a program's IR.
 * @example
 * const p = program({ w: atServer(f32([10])) }, ({ w }) => broadcast(w));
 * signatureOf(p.ir); // "(<w=f32[10]@SERVER> -> f32[10]@CLIENTS)"
 */
export function signatureOf(ir: ProgramIR): string {
  const inputType = (i: number): ValueType => ir.values[ir.graph.inputs[i]!]!;
  const outputType = (i: number): ValueType => ir.values[ir.graph.outputs[i]!]!;
  return printSignature(ir.inputTree, inputType, ir.outputTree, outputType);
}

/**
 * Declares a program. `inputs` names each input and gives its spec (a tree of f32/i32/bool
 * specs placed with atServer/atClients, or local); body receives the traced values and returns
 * the outputs (a tree).
 * @placement the inputs as their specs place them; the outputs may be SERVER or CLIENTS values
 * (FT109 for an output computed from private client data that no releasing aggregator took).
 */
export function program<const I extends InputSpecs, O>(
  inputs: I,
  body: (inputs: ValueOf<I>) => Validate<O, OutputCheck<O>>,
  options: ProgramOptions = {},
): Program<I, O> {
  // Deep enough that the stack of an error thrown deep in tracing still reaches the user's frame.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = Math.max(stackTraceLimit, tracingStackFrames);
  try {
    const budget = options.budget === undefined ? undefined : Object.freeze(checkBudget(options.budget));
    return traceProgram(options.name ?? "program", inputs, body, budget);
  } catch (error) {
    // A mistake in the user's program: shown at the user's line, not at FedTensor's (issue 24).
    throw error instanceof FedTensorError ? pointAtUserCode(error, program) : error;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

const tracingStackFrames = 100;

function traceProgram<I extends InputSpecs, O>(name: string, inputs: I, body: (inputs: ValueOf<I>) => unknown, budget: ProgramBudgetOption | undefined): Program<I, O> {
  if (inputs === null || typeof inputs !== "object" || Array.isArray(inputs)) {
    throw ftError("FT302", { what: "program() inputs", why: "expected a record of input specs, such as { x: atClients(f32([3])) }" });
  }
  expectFunction(body, "program() body");
  const specs = flatten(inputs, isSpec, "program() input", "specs (f32, i32, bool, atServer, atClients)");
  const values = new ValueTable();
  const graph = new GraphBuilder(values, undefined);
  graph.checksPrivacy = true;
  const outputs = recordInto(graph, () => {
    const args = specs.leaves.map((s: Spec) => graph.addInput({ shape: s.shape, dtype: s.dtype, placement: s.placement, ...(s.private ? { private: true as const } : {}) }));
    return flattenTracers(body(unflatten(specs.def, args) as ValueOf<I>), "program() result");
  });
  checkOutputsPrivacy(outputs.leaves, outputs.paths);
  const clientState = outputs.paths.filter((_, i) => isKept(outputs.leaves[i]!));
  const closed = graph.finish(outputs.leaves);
  return new Program<I, O>({
    format: "fedtensor-ir",
    version: 1,
    name,
    values: values.types,
    graph: closed,
    inputTree: specs.def,
    outputTree: outputs.def as TreeDef,
    ...(clientState.length === 0 ? {} : { clientState }),
  }, budget);
}
