/**
 * The reference interpreter's tensors: float64 data in row-major order with a concrete shape
 * and a dtype. int32 and bool values are carried in the same float64 data, kept integral
 * (and 0/1 for bool) by `convertValue`.
 */
import { ftError } from "../errors/error.js";
import { printShape, printType } from "../ir/print.js";
import type { DType, ValueType } from "../ir/types.js";

export type Shape = readonly number[];

export interface Tensor {
  readonly shape: Shape;
  readonly dtype: DType;
  readonly data: Float64Array;
}

export const sizeOf = (shape: Shape): number => shape.reduce((n, d) => n * d, 1);

export function tensor(shape: Shape, dtype: DType, data: Float64Array = new Float64Array(sizeOf(shape))): Tensor {
  if (data.length !== sizeOf(shape)) throw new Error(`internal: ${data.length} elements for shape ${printShape(shape)}`);
  return { shape: [...shape], dtype, data };
}

export const scalar = (value: number, dtype: DType): Tensor => tensor([], dtype, Float64Array.of(value));

/** Element distance between neighbours along each axis. */
export function stridesOf(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let step = 1;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    strides[axis] = step;
    step *= shape[axis]!;
  }
  return strides;
}

/** Calls visit with every multi-index of shape in row-major order (the index array is reused). */
export function forEachIndex(shape: Shape, visit: (index: readonly number[], flat: number) => void): void {
  const total = sizeOf(shape);
  const index = new Array<number>(shape.length).fill(0);
  for (let flat = 0; flat < total; flat++) {
    visit(index, flat);
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      if (++index[axis]! < shape[axis]!) break;
      index[axis] = 0;
    }
  }
}

/**
 * For broadcasting `from` to `to` (numpy rules, aligned from the right): the flat position in
 * `from` of the element that lands at each index of `to`. Assumes the shapes are compatible.
 */
export function broadcastPosition(from: Shape, to: Shape): (index: readonly number[]) => number {
  const strides = stridesOf(from);
  const offset = to.length - from.length;
  return (index) => {
    let flat = 0;
    for (let axis = 0; axis < from.length; axis++) if (from[axis] !== 1) flat += index[axis + offset]! * strides[axis]!;
    return flat;
  };
}

/** The type text of an operand for messages: its concrete shape with its declared dtype and placement. */
export const describe = (t: Tensor, declared: ValueType): string => printType({ ...declared, shape: t.shape });

/** FT201 unless `from` broadcasts to exactly `to` (numpy's broadcast_to: no dim of `to` may be dropped). */
export function requireBroadcastable(op: string, from: Tensor, fromType: ValueType, to: Shape, toType: ValueType): void {
  const offset = to.length - from.shape.length;
  from.shape.forEach((d, axis) => {
    const target = to[axis + offset];
    if (target === undefined || (d !== 1 && d !== target)) {
      const [a, b] = [describe(from, fromType), printType({ ...toType, shape: to })];
      throw ftError("FT201", { op, a, b, da: String(d), db: target === undefined ? "(none)" : String(target) });
    }
  });
}

/** x broadcast to `shape` (the caller has checked compatibility). */
export function broadcastTo(x: Tensor, shape: Shape): Tensor {
  const out = tensor(shape, x.dtype);
  const position = broadcastPosition(x.shape, shape);
  forEachIndex(shape, (index, flat) => (out.data[flat] = x.data[position(index)]!));
  return out;
}

/** One value in the value set of a dtype: int32 truncates toward zero and wraps as 32-bit integers do, bool is x != 0. */
export function convertValue(value: number, dtype: DType): number {
  switch (dtype) {
    case "float32":
      return value;
    case "int32":
      return value | 0;
    case "bool":
      return value !== 0 ? 1 : 0;
  }
}

export function toDType(x: Tensor, dtype: DType): Tensor {
  return tensor(x.shape, dtype, x.data.map((v) => convertValue(v, dtype)));
}

/** The block x[t] along the leading axis. */
export function indexLeading(x: Tensor, t: number): Tensor {
  const shape = x.shape.slice(1);
  const size = sizeOf(shape);
  return tensor(shape, x.dtype, x.data.slice(t * size, (t + 1) * size));
}

/** Stacks equal-shaped tensors along a new leading axis; `shape` is the member shape (for zero tensors). */
export function stackLeading(parts: readonly Tensor[], shape: Shape, dtype: DType): Tensor {
  const size = sizeOf(shape);
  const out = tensor([parts.length, ...shape], dtype);
  parts.forEach((part, t) => {
    if (printShape(part.shape) !== printShape(shape)) {
      throw new Error(`internal: stacking ${printShape(part.shape)} with ${printShape(shape)}`);
    }
    out.data.set(part.data, t * size);
  });
  return out;
}

/**
 * The shape and row-major entries of a nested array (a number is a scalar), or undefined
 * when the nesting is ragged. Entries are returned unchecked.
 */
export function fromNested(value: unknown): { shape: number[]; entries: unknown[] } | undefined {
  if (!Array.isArray(value)) return { shape: [], entries: [value] };
  const parts = value.map(fromNested);
  const first = parts[0];
  if (first === undefined) return { shape: [0], entries: [] };
  const sameShape = parts.every((p) => p !== undefined && printShape(p.shape) === printShape(first.shape));
  if (!sameShape) return undefined;
  return { shape: [value.length, ...first.shape], entries: parts.flatMap((p) => p!.entries) };
}

/** data[at] += value (a scatter-add step of the gradient and unbroadcast rules). */
export function addAt(data: Float64Array, at: number, value: number): void {
  data[at] = data[at]! + value;
}
