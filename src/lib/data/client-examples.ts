/**
 * Users' examples as clientsFrom takes them (nested arrays, typed arrays or { shape, data } per
 * client and field), checked and flattened: one field of one client at a time (examplesOf),
 * then every client's values of a field packed into one typed array (packField).
 */
import { ftError } from "../../errors/error.js";
import { elementCount, type HostData } from "./host-tensor.js";
import { firstNonFinite } from "./verified.js";

/**
 * The dtype of a client data field: float32 or int32.
 *
 * @example
 * const dtype: ClientDType = "int32"; // labels
 */
export type ClientDType = "float32" | "int32";

/**
 * A number, or arrays of them nested to any depth: one example.
 *
 * @example
 * import { clientsFrom, type NestedNumbers } from "fedtensor/lib";
 * const example: NestedNumbers = [[0, 1], [1, 0]]; // one 2x2 example
 * const data = clientsFrom([{ x: [example, example] }]);
 */
export type NestedNumbers = number | readonly NestedNumbers[];

/**
 * One field of one client's data: an array with one entry per example (a number, or nested
 * arrays); a typed array, one number per example; or { shape: [examples, ...], data }.
 *
 * @example
 * import { clientsFrom, type ExampleValues } from "fedtensor/lib";
 * const images: ExampleValues = { shape: [2, 2, 2], data: [0, 1, 1, 0, 1, 0, 0, 1] }; // two 2x2 examples
 * const data = clientsFrom([{ x: images, y: [0, 1] }], { dtypes: { y: "int32" } });
 */
export type ExampleValues = readonly NestedNumbers[] | Float32Array | Int32Array | { readonly shape: readonly number[]; readonly data: ArrayLike<number> };

export interface Examples {
  readonly count: number;
  readonly shape: readonly number[];
  readonly values: ArrayLike<number>;
}

const isTypedArray = (value: unknown): value is Float32Array | Int32Array => value instanceof Float32Array || value instanceof Int32Array;
export const isInt32 = (value: ExampleValues): boolean => value instanceof Int32Array || (!Array.isArray(value) && (value as { data?: unknown }).data instanceof Int32Array);

/** One field of one client as a count, one example's shape and the flat values. */
export function examplesOf(value: ExampleValues, where: string): Examples {
  if (isTypedArray(value)) return { count: value.length, shape: [], values: value };
  if (Array.isArray(value)) {
    const examples = value as readonly NestedNumbers[];
    if (examples.length === 0) return { count: 0, shape: [], values: [] };
    const shape = shapeOf(examples[0]!);
    const values: number[] = [];
    examples.forEach((example, i) => flattenExample(example, shape, 0, values, `${where}, example ${i}`));
    return { count: examples.length, shape, values };
  }
  const host = value as { shape?: unknown; data?: unknown } | null;
  if (host !== null && typeof host === "object" && Array.isArray(host.shape) && host.data !== null && typeof (host.data as ArrayLike<number>)?.length === "number") {
    const [count, ...shape] = host.shape as number[];
    const data = host.data as ArrayLike<number>;
    if (count === undefined || !(host.shape as number[]).every((d) => Number.isInteger(d) && d >= 0)) {
      throw ftError("FT302", { what: where, why: `shape [${(host.shape as unknown[]).join(", ")}] needs the number of examples first, then whole-number dims` });
    }
    if (data.length !== elementCount(host.shape as number[])) throw ftError("FT302", { what: where, why: `shape [${(host.shape as number[]).join(", ")}] does not hold ${data.length} values` });
    return { count, shape, values: data };
  }
  throw ftError("FT302", { what: where, why: "expected an array with one entry per example, a Float32Array or Int32Array, or { shape: [examples, ...], data }" });
}

function shapeOf(example: NestedNumbers): number[] {
  const shape: number[] = [];
  let level: NestedNumbers = example;
  while (Array.isArray(level)) {
    shape.push(level.length);
    if (level.length === 0) break;
    level = level[0] as NestedNumbers;
  }
  return shape;
}

function flattenExample(value: NestedNumbers, shape: readonly number[], depth: number, out: number[], where: string): void {
  if (depth === shape.length) {
    if (typeof value !== "number") throw ftError("FT302", { what: where, why: `is ragged: expected shape [${shape.join(", ")}] (that of example 0), found an array at depth ${depth}` });
    out.push(value);
    return;
  }
  if (!Array.isArray(value)) throw ftError("FT302", { what: where, why: `is ragged: expected shape [${shape.join(", ")}] (that of example 0), found ${typeof value === "number" ? "a number" : typeof value} at depth ${depth}` });
  if (value.length !== shape[depth]) throw ftError("FT302", { what: where, why: `is ragged: expected shape [${shape.join(", ")}] (that of example 0), found ${value.length} entries at depth ${depth}` });
  for (const inner of value as readonly NestedNumbers[]) flattenExample(inner, shape, depth + 1, out, where);
}

/** The clients' values of one field in one typed array, checked for its dtype. */
export function packField(parts: readonly Examples[], dtype: ClientDType, ids: readonly string[], name: string): HostData {
  const total = parts.reduce((sum, part) => sum + part.values.length, 0);
  const data = dtype === "int32" ? new Int32Array(total) : new Float32Array(total);
  let at = 0;
  parts.forEach((part, c) => {
    const size = part.count === 0 ? 1 : part.values.length / part.count;
    const where = (i: number) => `client ${ids[c]}, field ${name}, example ${Math.floor(i / size)}`;
    if (dtype === "int32" && !(part.values instanceof Int32Array)) {
      for (let i = 0; i < part.values.length; i++) {
        const v = part.values[i]!;
        if (!(Number.isInteger(v) && v >= -0x8000_0000 && v <= 0x7fff_ffff)) throw ftError("FT302", { what: where(i), why: `value ${v} is not an int32 whole number (the field is int32)` });
      }
    }
    data.set(part.values, at);
    if (dtype === "float32") {
      // After the cast: a float64 beyond float32's range becomes Infinity here.
      const bad = firstNonFinite(data.subarray(at, at + part.values.length));
      if (bad >= 0) throw ftError("FT302", { what: where(bad), why: `value ${part.values[bad]} is not a finite float32; training needs finite values` });
    }
    at += part.values.length;
  });
  return data;
}
