/**
 * Helpers of the reference interpreter's tests: running a program, reading results, and
 * programs of one primitive for the primitives that only transformations emit.
 */
import { expect } from "vitest";
import { currentGraph, type Tracer } from "../../src/front/trace.js";
import { program, type Program } from "../../src/index.js";
import type { Attrs } from "../../src/ir/primitives.js";
import { interpret, type InputTree, type OutputLeaf, type OutputTree } from "../../src/interpret/reference.js";

/** Runs a program in the reference interpreter. */
export function run(p: Program<unknown, unknown>, inputs: InputTree, options?: { clients?: number }): OutputTree {
  return interpret(p.ir, inputs, options);
}

/** The output of a program with a single output. */
export function runLeaf(p: Program<unknown, unknown>, inputs: InputTree, options?: { clients?: number }): OutputLeaf {
  return run(p, inputs, options) as OutputLeaf;
}

/** The outputs of a program returning a record. */
export function runRecord(p: Program<unknown, unknown>, inputs: InputTree, options?: { clients?: number }): Record<string, OutputTree> {
  return run(p, inputs, options) as Record<string, OutputTree>;
}

/** Shape and entries of an output leaf, for toEqual. */
export const plain = (leaf: OutputTree | undefined): { shape: number[]; data: number[] } => {
  if (leaf === undefined) throw new Error("no such output");
  const { shape, data } = leaf as OutputLeaf;
  return { shape, data: Array.from(data) };
};

/** Entries equal to within `digits` decimal places. */
export function expectClose(actual: ArrayLike<number>, expected: readonly number[], digits = 9): void {
  expect(actual.length).toBe(expected.length);
  Array.from(actual).forEach((v, i) => expect(v, `entry ${i}`).toBeCloseTo(expected[i]!, digits));
}

/** Records one primitive with one output while a program is traced, for primitives no public function emits on its own (grad and batching emit them). */
export function emit(op: string, inputs: readonly unknown[], attrs: Attrs = {}): never {
  return currentGraph(op).emit(op, inputs as Tracer[], attrs)[0] as never;
}

/** A program applying one primitive to its inputs (in key order). */
export function primitiveProgram(op: string, specs: Record<string, object>, attrs: Attrs = {}): Program<unknown, unknown> {
  return program(specs as never, (inputs: Record<string, unknown>) => emit(op, Object.values(inputs), attrs));
}
