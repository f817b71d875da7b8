/**
 * The algorithm library's guard at its boundary: what its programs are given is checked
 * before it runs, so a mistake in the data is an FT error rather than a silently wrong round.
 * A label outside the model's classes would one-hot to zeros (loss 0, no update), a NaN pixel
 * would poison the model, and a cohort whose weights are all zero (every client empty or
 * dropped) would average to NaN.
 *
 * Every run scans its data again, tensors included: whoever holds a typed array, or a tensor
 * whose storage dataSync() hands out, may have written into it since the last check, so a
 * "checked" mark would outlive an edit (verified.ts says what the scan costs).
 */
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { Program, type RunInputs, type RunOutputs } from "../../front/program.js";
import type { RunOptions } from "../../runtime/run.js";
import { firstNonFinite } from "../data/verified.js";
import type { AnyModel } from "./types.js";

/**
 * A leaf's values on the host: a tensor's (without a copy on tfjs's cpu backend), a host
 * tensor's, or numbers. Read asynchronously: tfjs webgpu cannot read GPU data synchronously
 * in Node (its readSync needs a browser's OffscreenCanvas).
 */
export async function valuesOf(leaf: unknown): Promise<ArrayLike<number> | undefined> {
  if (leaf instanceof tf.Tensor) return leaf.isDisposed ? undefined : ((await leaf.data()) as ArrayLike<number>);
  if (typeof leaf === "number") return [leaf];
  if (Array.isArray(leaf)) return leaf.flat(Infinity) as number[];
  const data = (leaf as { data?: unknown } | null)?.data;
  return data !== null && typeof data === "object" && typeof (data as ArrayLike<number>).length === "number" ? (data as ArrayLike<number>) : undefined;
}

/** Checks a leaf's values as they are now; malformed leaves are left to the runtime's own FT302. */
async function checkNow(leaf: unknown, check: (values: ArrayLike<number>) => void): Promise<void> {
  const values = await valuesOf(leaf);
  if (values !== undefined) check(values);
}

function checkFeatures(model: AnyModel, x: unknown, what: string): Promise<void> {
  return checkNow(x, (values) => {
    if (model.inputDType === "int32") return; // integers, checked by the runtime for an i32 input
    const bad = firstNonFinite(values);
    if (bad >= 0) throw ftError("FT302", { what, why: `value ${values[bad]} at flat index ${bad} is not finite; training needs finite values` });
  });
}

function checkLabels(model: AnyModel, y: unknown, what: string): Promise<void> {
  return checkNow(y, (values) => {
    for (let i = 0; i < values.length; i++) {
      const label = values[i]!;
      if (!(Number.isInteger(label) && label >= 0 && label < model.classes)) {
        throw ftError("FT302", { what, why: `label ${label} at flat index ${i} is outside model ${model.name}'s classes [0, ${model.classes})` });
      }
    }
  });
}

/** Example counts: finite, >= 0, and not all zero (FT310). A few numbers per round: always checked. */
async function checkCounts(count: unknown, what: string): Promise<void> {
  const values = await valuesOf(count);
  if (values === undefined) return;
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const c = values[i]!;
    if (!(Number.isFinite(c) && c >= 0)) throw ftError("FT302", { what, why: `client ${i}'s count ${c} is not a count (finite and >= 0)` });
    total += c;
  }
  if (total === 0) {
    throw ftError("FT310", { what, why: `all ${values.length} clients have count 0 (empty or dropped): the round has no client to average over` });
  }
}

interface DataInputs {
  readonly x?: unknown;
  readonly y?: unknown;
  readonly count?: unknown;
}

/** Checks a round's (or an evaluation's) data inputs against `model`. */
export async function checkDataInputs(model: AnyModel, inputs: unknown, programName: string): Promise<void> {
  if (inputs === null || typeof inputs !== "object") return; // the runtime's FT302 says what is wrong
  const { x, y, count } = inputs as DataInputs;
  if (x !== undefined) await checkFeatures(model, x, `${programName} input x`);
  if (y !== undefined) await checkLabels(model, y, `${programName} input y`);
  if (count !== undefined) await checkCounts(count, `${programName} input count`);
}

/** A check of a program's other inputs, run before the data's: `name` is the program's. */
export type InputCheck = (inputs: unknown, name: string) => Promise<void>;

/** A library program whose run() checks its data inputs first (after `check`, when given, on the others). */
export class CheckedProgram<I, O> extends Program<I, O> {
  constructor(
    program: Program<I, O>,
    private readonly model: AnyModel,
    private readonly check?: InputCheck,
  ) {
    super(program.ir);
  }

  override async run(inputs: RunInputs<I>, options?: RunOptions): Promise<RunOutputs<O>> {
    if (this.check !== undefined) await this.check(inputs, this.name);
    await checkDataInputs(this.model, inputs, this.name);
    return super.run(inputs, options);
  }
}
