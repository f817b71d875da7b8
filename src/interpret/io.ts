/**
 * The reference interpreter's inputs and outputs: reading user data against the program's
 * input tree (structure, data, dtypes, dims, the client axis) and writing the output tree.
 */
import { ftError } from "../errors/error.js";
import { describeValue } from "../front/tree.js";
import { isAtClients } from "../ir/placement.js";
import { printType } from "../ir/print.js";
import type { DType, ProgramIR, TreeDef, ValueType } from "../ir/types.js";
import { fromNested, indexLeading, sizeOf, stackLeading, tensor, type Tensor } from "./tensor.js";
import { AtClients, checkShape, isAtClientsValue, type DimBindings, type Value } from "./values.js";

/** A tensor as data: shape and row-major entries, a plain number (a scalar), or nested arrays of numbers. */
export type InputLeaf = { readonly shape: readonly number[]; readonly data: ArrayLike<number> } | number | NestedNumbers;
export type NestedNumbers = readonly (number | NestedNumbers)[];
export type InputValue = InputLeaf | readonly InputValue[] | { readonly [key: string]: InputValue };
/** A program's inputs by name; values at the CLIENTS carry a leading client axis [C, ...member shape]. */
export type InputTree = { readonly [name: string]: InputValue };

export interface OutputLeaf {
  readonly shape: number[];
  readonly dtype: DType;
  readonly data: Float64Array;
}
export type OutputTree = OutputLeaf | OutputTree[] | { [key: string]: OutputTree };

const isRecord = (x: unknown): x is Record<string, unknown> =>
  x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype;

const isShapeData = (x: unknown): x is { shape: unknown; data: unknown } => isRecord(x) && "shape" in x && "data" in x;

/** Calls visit with each leaf of `given` that sits where `def` has a leaf (graph input position) and its path; FT302 on mismatch. */
function walkInputs(def: TreeDef, given: unknown, path: string, visit: (position: number, leaf: unknown, path: string) => void): void {
  const what = path === "" ? "inputs" : `input ${path}`;
  if (typeof def === "number") return visit(def, given, path);
  if (Array.isArray(def)) {
    if (!Array.isArray(given) || given.length !== def.length) {
      throw ftError("FT302", { what, why: `expected an array of ${def.length} values, got ${describeValue(given)}` });
    }
    def.forEach((child: TreeDef, i) => walkInputs(child, given[i], `${path}[${i}]`, visit));
    return;
  }
  const record = def as { readonly [key: string]: TreeDef };
  if (!isRecord(given)) throw ftError("FT302", { what, why: `expected a record of ${Object.keys(record).join(", ")}, got ${describeValue(given)}` });
  const extra = Object.keys(given).find((key) => !(key in record));
  if (extra !== undefined) throw ftError("FT302", { what: `input ${path === "" ? extra : `${path}.${extra}`}`, why: "not an input of the program" });
  for (const [key, child] of Object.entries(record)) {
    const at = path === "" ? key : `${path}.${key}`;
    if (!(key in given)) throw ftError("FT302", { what: `input ${at}`, why: "missing" });
    walkInputs(child, given[key], at, visit);
  }
}

/** Why an entry is not a value of dtype, or undefined when it is. */
function badEntry(value: unknown, dtype: DType): string | undefined {
  if (typeof value !== "number") return `is ${describeValue(value)}, not a number`;
  if (dtype === "int32" && !(Number.isInteger(value) && value === (value | 0))) return `${value} is not a 32-bit integer`;
  if (dtype === "bool" && value !== 0 && value !== 1) return `${value} is not 0 or 1 (bool)`;
  return undefined;
}

/** A leaf's data as a tensor of dtype, or FT302. */
function readLeaf(leaf: unknown, dtype: DType, what: string): Tensor {
  let shape: unknown;
  let entries: ArrayLike<unknown>;
  if (isShapeData(leaf)) {
    shape = leaf.shape;
    const data = leaf.data as { length?: unknown };
    if (data === null || typeof data !== "object" || typeof data.length !== "number") {
      throw ftError("FT302", { what, why: `data is ${describeValue(leaf.data)}, not an array of numbers` });
    }
    entries = data as ArrayLike<unknown>;
  } else if (typeof leaf === "number" || Array.isArray(leaf)) {
    const nested = fromNested(leaf);
    if (nested === undefined) throw ftError("FT302", { what, why: "nested arrays are ragged" });
    ({ shape, entries } = nested);
  } else {
    throw ftError("FT302", { what, why: `expected { shape, data }, a number or nested arrays of numbers, got ${describeValue(leaf)}` });
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw ftError("FT302", { what, why: "shape must be an array of integers >= 0" });
  }
  const dims = shape as number[];
  if (entries.length !== sizeOf(dims)) {
    throw ftError("FT302", { what, why: `data has ${entries.length} entries, shape [${dims.join(",")}] needs ${sizeOf(dims)}` });
  }
  const data = new Float64Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const why = badEntry(entries[i], dtype);
    if (why !== undefined) throw ftError("FT302", { what, why: `entry ${i} ${why}` });
    data[i] = entries[i] as number;
  }
  return tensor(dims, dtype, data);
}

const sameEntries = (a: Tensor, b: Tensor): boolean => a.data.every((v, i) => v === b.data[i] || (Number.isNaN(v) && Number.isNaN(b.data[i]!)));

/** One input as a value of its declared type: CLIENTS data split along the client axis. */
function readInput(leaf: unknown, type: ValueType, what: string, dims: DimBindings, cohort: CohortSize): Value {
  const data = readLeaf(leaf, type.dtype, what);
  const atClients = isAtClients(type.placement);
  const rank = type.shape.length + (atClients ? 1 : 0);
  if (data.shape.length !== rank) {
    const expected = atClients ? `[C, ...member shape] for ${printType(type)}` : printType(type);
    throw ftError("FT302", { what, why: `has rank ${data.shape.length}, expected rank ${rank}: ${expected}` });
  }
  if (!atClients) {
    checkShape(data.shape, type.shape, dims, what);
    return data;
  }
  cohort.agree(data.shape[0]!, what);
  const members = Array.from({ length: data.shape[0]! }, (_, i) => indexLeading(data, i));
  for (const member of members) checkShape(member.shape, type.shape, dims, what);
  if (type.placement === "clients-equal" && !members.every((m) => sameEntries(m, members[0]!))) {
    throw ftError("FT302", { what, why: `members differ, but ${printType(type)} declares them equal` });
  }
  return new AtClients(members);
}

/** The number of clients, agreed by every CLIENTS input and options.clients. */
class CohortSize {
  size: number | undefined;
  agree(size: number, what: string): void {
    if (size < 1) throw ftError("FT302", { what, why: "a cohort has at least one client" });
    if (this.size !== undefined && this.size !== size) throw ftError("FT210", { what, dim: "clients", got: size, want: this.size });
    this.size = size;
  }
}

/** The program's inputs as values, by graph input position, and the number of clients (undefined when nothing fixes it). */
export function readInputs(
  ir: ProgramIR,
  inputs: unknown,
  clients: number | undefined,
  dims: DimBindings,
): { args: Value[]; clients: number | undefined } {
  const cohort = new CohortSize();
  const args: Value[] = [];
  walkInputs(ir.inputTree, inputs, "", (position, leaf, path) => {
    args[position] = readInput(leaf, ir.values[ir.graph.inputs[position]!]!, `input ${path}`, dims, cohort);
  });
  if (clients !== undefined) {
    if (!Number.isInteger(clients) || clients < 1) throw ftError("FT305", { option: "clients", why: `must be an integer >= 1, got ${clients}` });
    cohort.agree(clients, "options.clients");
  }
  return { args, clients: cohort.size };
}

function outputLeaf(value: Value, type: ValueType): OutputLeaf {
  const data = isAtClientsValue(value) ? stackLeading(value.members, value.members[0]!.shape, type.dtype) : value;
  return { shape: [...data.shape], dtype: type.dtype, data: data.data };
}

/** The output tree of ir with the graph's output values (by position) at its leaves. */
export function writeOutputs(ir: ProgramIR, outputs: readonly Value[]): OutputTree {
  const build = (def: TreeDef): OutputTree => {
    if (typeof def === "number") return outputLeaf(outputs[def]!, ir.values[ir.graph.outputs[def]!]!);
    if (Array.isArray(def)) return def.map(build);
    const out: { [key: string]: OutputTree } = {};
    for (const [key, child] of Object.entries(def as { readonly [key: string]: TreeDef })) out[key] = build(child);
    return out;
  };
  return build(ir.outputTree);
}
