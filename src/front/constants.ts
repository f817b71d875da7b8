/**
 * Local constants: values with no placement, usable at any placement (a constant combines
 * with a SERVER or CLIENTS value where that value lives). Shapes may use named dims, bound
 * when the program runs.
 */
import type { DType, Dim, Placement, Shape, Tensor, TypeInfo, StaticType } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { flatten, unflatten } from "./tree.js";

/** The shape of a nested array literal: [[1,2],[3,4]] is [2, 2]. */
export type ShapeOfArray<V> = V extends number ? [] : V extends readonly [infer First, ...unknown[]] ? [V["length"], ...ShapeOfArray<First>] : V extends readonly unknown[] ? [number] : never;
type Mutable<S> = { -readonly [K in keyof S]: S[K] };

const dtypes: readonly DType[] = ["float32", "int32", "bool"];

function checkDType(dtype: string, op: string): void {
  if (!dtypes.includes(dtype as DType)) throw ftError("FT305", { option: `${op} dtype`, why: `unknown dtype ${dtype}; use ${dtypes.join(", ")}` });
}

/** The shape of nested arrays, checking that they are rectangular and hold finite numbers. */
function arrayShape(value: unknown, op: string): number[] {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw ftError("FT302", { what: `${op}() value`, why: `${value} is not a finite number` });
    return [];
  }
  if (!Array.isArray(value) || value.length === 0) throw ftError("FT302", { what: `${op}() value`, why: "expected a number or a non-empty nested array of numbers" });
  const inner = value.map((v) => arrayShape(v, op));
  if (inner.some((s) => s.join() !== inner[0]!.join())) throw ftError("FT302", { what: `${op}() value`, why: "nested arrays of different lengths" });
  return [value.length, ...inner[0]!];
}

/**
 * A local constant from a number or nested arrays; float32 unless a dtype is given.
 *
 * @placement none: a local constant, which takes the placement of the value it is combined with.
 * @example
 * program({ x: atServer(f32([3])) }, ({ x }) => mul(x, constant([1, 0, -1]))); // f32[3]@SERVER
 */
export function constant<const V extends number | readonly unknown[], D extends DType = "float32">(
  value: V,
  dtype?: D,
): Tensor<ShapeOfArray<V>, NoInfer<D>, "local"> {
  const op = "constant";
  const type = dtype ?? "float32";
  checkDType(type, op);
  const shape = arrayShape(value, op);
  return currentGraph(op).emit("constant", [], { value: value as never, dtype: type, shape }, op)[0] as never;
}

function filled(op: string, shape: readonly Dim[], value: number, dtype: DType): Tracer {
  checkDType(dtype, op);
  for (const d of shape) {
    const ok = (typeof d === "string" && d.length > 0) || (Number.isInteger(d) && (d as number) >= 0);
    if (!ok) throw ftError("FT302", { what: `${op}() shape`, why: `dims are sizes >= 0 or names, got ${String(d)}` });
  }
  return currentGraph(op).emit("fill", [], { shape: [...shape], value, dtype }, op)[0]!;
}

/**
 * A local tensor of zeros of the given shape, float32 unless a dtype is given.
 *
 * @placement none: a local constant, which takes the placement of the value it is combined with.
 * @example
 * program({ x: atClients(f32([3])) }, ({ x }) => reduceSum(map((xm) => add(xm, zeros([3])), x)));
 */
export function zeros<const S extends readonly Dim[], D extends DType = "float32">(shape: S, dtype?: D): Tensor<Mutable<S>, NoInfer<D>, "local"> {
  return filled("zeros", shape, 0, dtype ?? "float32") as never;
}
/**
 * A local tensor of ones of the given shape, float32 unless a dtype is given.
 *
 * @placement none: a local constant, which takes the placement of the value it is combined with.
 * @example
 * program({ x: atServer(f32(["B", 784])) }, ({ x }) => matmul(x, ones([784, 1]))); // row sums: f32[B,1]@SERVER
 */
export function ones<const S extends readonly Dim[], D extends DType = "float32">(shape: S, dtype?: D): Tensor<Mutable<S>, NoInfer<D>, "local"> {
  return filled("ones", shape, 1, dtype ?? "float32") as never;
}
/**
 * A local tensor of the given shape with every entry `value`, float32 unless a dtype is given.
 *
 * @placement none: a local constant, which takes the placement of the value it is combined with.
 * @example
 * program({ x: atServer(f32([3])) }, ({ x }) => maximum(x, full([3], 0.5)));
 */
export function full<const S extends readonly Dim[], D extends DType = "float32">(shape: S, value: number, dtype?: D): Tensor<Mutable<S>, NoInfer<D>, "local"> {
  if (!Number.isFinite(value)) throw ftError("FT302", { what: "full() value", why: `${value} is not a finite number` });
  return filled("full", shape, value, dtype ?? "float32") as never;
}

/**
 * Local zeros shaped like each leaf of a tree: its shape and dtype, no placement.
 *
 * @example
 * const carry: LocalZeros<{ w: Tensor<[3], "float32", "server"> }> = { w: zeros([3]) }; // { w: f32[3] local }
 */
export type LocalZeros<T> = T extends { readonly [K in StaticType]: TypeInfo<infer S extends Shape, infer D extends DType, Placement> }
  ? Tensor<Mutable<S>, D, "local">
  : { -readonly [K in keyof T]: LocalZeros<T[K]> };

/**
 * Local zeros with the shape and dtype of `x` (a tensor, or a tree of them: each leaf), at no
 * placement, unlike `zerosLike(x)`, which keeps x's placement and is computed from x: the
 * initial carry of a `scan` or `fori` written without spelling out its shape,
 * `scan(localZeros(params), xs, body)` (TFF's zeros of a type, JAX's `zeros_like`), usable
 * inside `map` and at any placement (a local value combines with a placed one where that one
 * lives). It reads only `x`'s static type, never its values, so it is not computed from `x`:
 * zeros shaped like private data are not private. A dim known only at run time (`number`) has
 * no size to fill while tracing: FT302.
 * @placement none: the result is local whatever x's placement, so it can start a scan or fori
 * carry at any placement.
 * @example
 * program({ xs: atServer(f32([5, 3])) }, ({ xs }) => scan(localZeros(xs), xs, (acc, x) => [add(acc, x), undefined] as const));
 */
export function localZeros<T>(x: T): LocalZeros<T> {
  const op = "localZeros";
  const { leaves, def } = flatten(x, isTracer, `${op}() value`);
  const zeros = leaves.map((leaf) => {
    if (leaf.shape.some((d) => d === null)) {
      throw ftError("FT302", { what: `${op}() value ${leaf.toString()}`, why: "has a dim known only at run time; give the carry's shape to zeros([...]) instead" });
    }
    return filled(op, leaf.shape as Dim[], 0, leaf.dtype);
  });
  return unflatten(def, zeros) as never;
}
