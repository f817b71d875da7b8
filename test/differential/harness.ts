/**
 * Running a generated program on both paths and checking that they agree: the optimised
 * path on a backend (twice: the second run must leave tf.memory().numTensors as it found it
 * and give the same outputs bit for bit) against the float64 reference interpreter.
 */
import * as tf from "@tensorflow/tfjs";
import fc from "fast-check";
import { interpret, type OutputTree } from "../../src/interpret/reference.js";
import { differences, toHost, type HostTree } from "./compare.js";
import type { GeneratedProgram } from "./programs.js";
import { nearTie } from "./ties.js";
import { tensorsLeftSince } from "../helpers/tensor-leaks.js";

export type Backend = "wasm" | "cpu" | "onnx" | "webgpu";

/** A failure report: the program as code, its data, and what went wrong. */
export function report(g: GeneratedProgram, what: string): Error {
  return new Error(`${what}\n\nprogram (${g.clients} clients):\n${g.code}\n\ninputs: ${JSON.stringify(g.inputs)}`);
}

function runReference(g: GeneratedProgram): OutputTree {
  try {
    return interpret(g.program.ir, g.inputs, { clients: g.clients });
  } catch (error) {
    throw report(g, `the reference interpreter failed: ${(error as Error).message}`);
  }
}

async function runOnce(g: GeneratedProgram, backend: Backend): Promise<HostTree> {
  const out = await g.program.run(g.inputs as never, { backend, clients: g.clients });
  try {
    return await toHost(out);
  } finally {
    tf.dispose(out as tf.TensorContainer);
  }
}

/** The optimised path's outputs, checking that a run leaks no tensor and runs are reproducible. */
async function runOptimised(g: GeneratedProgram, backend: Backend): Promise<HostTree> {
  let first: HostTree;
  try {
    // The first run compiles, and the compiled form keeps its constants: count after it.
    first = await runOnce(g, backend);
  } catch (error) {
    throw report(g, `the optimised path (${backend}) failed: ${(error as Error).message}`);
  }
  const before = tf.memory().numTensors;
  const second = await runOnce(g, backend);
  const leaked = tensorsLeftSince(before);
  if (leaked > 0) throw report(g, `a run on ${backend} left ${leaked} tensors behind after its outputs were disposed`);
  if (JSON.stringify(second) !== JSON.stringify(first)) {
    const changed = differences(second, first).join("\n") || "(differences below the tolerance)";
    throw report(g, `two runs on ${backend} gave different outputs (second vs first):\n${changed}`);
  }
  return second;
}

/**
 * Runs g on both paths (on each backend given); throws a report when they disagree. The
 * compiled forms are freed at the end: a program left to the garbage collector would free its
 * constants while a later program's run awaits onnxruntime, and upset that run's tensor count.
 */
export async function checkAgreement(g: GeneratedProgram, backends: readonly Backend[]): Promise<OutputTree> {
  const reference = runReference(g);
  try {
    for (const backend of backends) {
      const found = differences(await runOptimised(g, backend), reference);
      if (found.length === 0) continue;
      const tie = nearTie(g);
      const what = `the optimised path (${backend}) disagrees with the reference interpreter:\n${found.join("\n")}`;
      if (tie === undefined) throw report(g, what);
      throw new TieSensitive(report(g, `${what}\nbut the program decides on a near tie (${tie})`).message);
    }
  } finally {
    await g.program.dispose();
  }
  return reference;
}

/** A disagreement on a program that decides on a near tie (see ties.ts): no bug, no right answer. */
export class TieSensitive extends Error {}

/** Inside a fast-check property: runs check, discarding (and counting) a tie-sensitive program. */
export async function discardingTies(check: () => Promise<unknown>, discards: { count: number }): Promise<void> {
  try {
    await check();
  } catch (error) {
    if (!(error instanceof TieSensitive)) throw error;
    discards.count++;
    fc.pre(false);
  }
}

/**
 * fast-check settings: a fixed seed per property (so the suite is reproducible; fast-check
 * prints it with any counterexample), or FEDTENSOR_DIFF_SEED and FEDTENSOR_DIFF_RUNS to explore.
 */
export function propertySettings(seed: number, numRuns: number): fc.Parameters<unknown> {
  const env = process.env;
  return {
    seed: env.FEDTENSOR_DIFF_SEED === undefined ? seed : Number(env.FEDTENSOR_DIFF_SEED),
    numRuns: env.FEDTENSOR_DIFF_RUNS === undefined ? numRuns : Number(env.FEDTENSOR_DIFF_RUNS),
  };
}
