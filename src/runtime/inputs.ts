// The public types name tfjs-core's Tensor only, never the @tensorflow/tfjs umbrella, whose
// layers/converter declarations fail a user's strict tsc without skipLibCheck. tfjs-core's
// own declarations use the global `Long` of @types/long, which a tsconfig with a `types`
// list would leave out: this reference, kept in the emitted .d.ts, brings it in.
/// <reference types="long" preserve="true" />
/**
 * A run's inputs: checking the data against the program's declared inputs, binding named and
 * run-time dims, and turning every leaf into a tfjs tensor. CLIENTS inputs carry the clients
 * on axis 0: `{f32[B,784]}@CLIENTS` takes data of shape [C, B, 784].
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import type { DType, ProgramIR, ValueType } from "../ir/types.js";
import { flattenAs, leafPaths } from "../front/tree.js";
import { CLIENTS_DIM } from "../transform/specialize.js";

/**
 * Plain data for one tensor: a flat array with its shape.
 *
 * @example
 * const x: HostTensor = { shape: [2, 3], data: [1, 2, 3, 4, 5, 6] };
 * await program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(x)).run({ x });
 */
export interface HostTensor {
  readonly shape: readonly number[];
  readonly data: ArrayLike<number>;
}

export type InputLeaf = TfTensor | HostTensor | number | readonly unknown[];

export interface BoundInputs {
  readonly tensors: TfTensor[];
  /** Tensors made here from host data, to dispose after the run. */
  readonly created: TfTensor[];
  /** Concrete type of every graph input. */
  readonly types: ValueType[];
  readonly bindings: Map<string, number>;
  readonly clients: number;
}

const isHostTensor = (x: unknown): x is HostTensor =>
  typeof x === "object" && x !== null && !Array.isArray(x) && "shape" in x && "data" in x && !(x instanceof tf.Tensor);
const isLeaf = (x: unknown): x is InputLeaf =>
  x instanceof tf.Tensor || isHostTensor(x) || typeof x === "number" || (Array.isArray(x) && x.every((e) => !isRecord(e)));
const isRecord = (x: unknown) => typeof x === "object" && x !== null && !Array.isArray(x) && !isHostTensor(x) && !(x instanceof tf.Tensor);

function toTensor(leaf: InputLeaf, dtype: DType, where: string): { tensor: TfTensor; created: boolean } {
  if (leaf instanceof tf.Tensor) {
    if (leaf.isDisposed) throw ftError("FT302", { what: where, why: "the tensor was already disposed" });
    if (leaf.dtype !== dtype) throw ftError("FT302", { what: where, why: `dtype ${leaf.dtype} where ${dtype} is declared` });
    return { tensor: leaf, created: false };
  }
  if (isHostTensor(leaf)) {
    checkHostTensor(leaf, dtype, where);
    return { tensor: tf.tensor(leaf.data as number[], [...leaf.shape], dtype), created: true };
  }
  if (dtype === "int32") requireIntegers(typeof leaf === "number" ? [leaf] : (leaf as unknown[]).flat(Infinity), where);
  try {
    return { tensor: tf.tensor(leaf as number, undefined, dtype), created: true };
  } catch (error) {
    throw ftError("FT302", { what: where, why: `not a tensor: ${(error as Error).message}` });
  }
}

const describe = (x: unknown): string => (x === null ? "null" : Array.isArray(x) ? "an array" : typeof x);

/**
 * A host tensor's shape and data, before tfjs sees them: tfjs would take a negative dim, read
 * a string's characters as values and truncate 1.5 to 1 for an int32 input.
 */
function checkHostTensor(leaf: HostTensor, dtype: DType, where: string): void {
  const { shape, data } = leaf as { shape: unknown; data: unknown };
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    throw ftError("FT302", { what: where, why: `shape ${JSON.stringify(shape)} is not a list of sizes (integers >= 0)` });
  }
  const isNumbers = ArrayBuffer.isView(data) ? !(data instanceof DataView) : Array.isArray(data) && data.every((v) => typeof v === "number" || typeof v === "boolean");
  if (!isNumbers) throw ftError("FT302", { what: where, why: `data is ${describe(data)}, not a typed array or an array of numbers` });
  const values = data as ArrayLike<number>;
  const size = (shape as number[]).reduce((a, b) => a * b, 1);
  if (values.length !== size) {
    throw ftError("FT302", { what: where, why: `data has ${values.length} values but shape [${shape.join(",")}] needs ${size}` });
  }
  // An Int32Array holds integers already; anything else given for int32 is checked value by value.
  if (dtype === "int32" && !(data instanceof Int32Array)) requireIntegers(values, where);
}

function requireIntegers(values: ArrayLike<unknown>, where: string): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!(typeof v === "number" && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31)) {
      throw ftError("FT302", { what: where, why: `value ${String(v)} at flat index ${i} is not a 32-bit integer, where int32 is declared` });
    }
  }
}

/** Binds one input leaf's dims against its declared type; returns the concrete member shape. */
function bindShape(declared: ValueType, actual: readonly number[], where: string, bindings: Map<string, number>): void {
  const atClients = declared.placement === "clients" || declared.placement === "clients-equal";
  const expected = atClients ? [CLIENTS_DIM, ...declared.shape] : declared.shape;
  if (actual.length !== expected.length) {
    throw ftError("FT302", {
      what: where,
      why: `rank ${actual.length} (shape [${actual.join(",")}]) where ${printType(declared)} needs rank ${expected.length}${atClients ? " (clients first)" : ""}`,
    });
  }
  // As the reference interpreter says it (src/interpret/io.ts), not as an option's error.
  if (atClients && actual[0] === 0) throw ftError("FT302", { what: where, why: "a cohort has at least one client" });
  expected.forEach((dim, i) => {
    const size = actual[i]!;
    if (typeof dim === "number" && dim !== size) throw ftError("FT210", { what: where, dim: i, got: size, want: dim });
    if (typeof dim === "string") {
      const bound = bindings.get(dim);
      if (bound === undefined) bindings.set(dim, size);
      else if (bound !== size) throw ftError("FT210", { what: where, dim: dim === CLIENTS_DIM ? "clients" : dim, got: size, want: bound });
    }
  });
}

export function bindInputs(ir: ProgramIR, data: unknown, clientsOption: number | undefined): BoundInputs {
  const declared = ir.graph.inputs.map((id) => ir.values[id]!);
  const paths = leafPaths(ir.inputTree);
  const leaves = flattenAs(ir.inputTree, data, isLeaf, "program input");
  const bindings = new Map<string, number>();
  if (clientsOption !== undefined) bindings.set(CLIENTS_DIM, clientsOption);
  const created: TfTensor[] = [];
  try {
    const tensors = leaves.map((leaf, i) => {
      const where = `input ${paths[i]}`;
      const { tensor, created: made } = toTensor(leaf, declared[i]!.dtype, where);
      if (made) created.push(tensor);
      bindShape(declared[i]!, tensor.shape, where, bindings);
      return tensor;
    });
    const clients = bindings.get(CLIENTS_DIM);
    const types = declared.map((t, i) => ({
      ...t,
      shape: tensors[i]!.shape.slice(t.placement === "clients" || t.placement === "clients-equal" ? 1 : 0),
    }));
    return { tensors, created, types, bindings, clients: clients ?? 1 };
  } catch (error) {
    created.forEach((t) => t.dispose());
    throw error;
  }
}
