/**
 * A seeded random rotation: the randomized Hadamard transform R = H D / sqrt(d) of Ailon and
 * Chazelle 2006, as distributed DP (Kairouz, Liu and Steinke 2021) and quantized aggregation
 * (Suresh et al. 2017) use it. x is flattened and zero-padded to d = 2^m entries, multiplied by
 * D, a diagonal of random signs drawn from the key, then by H, the d x d Sylvester-Hadamard
 * matrix, and scaled by 1 / sqrt(d). R is orthogonal, so norms are kept, and it spreads a
 * vector's mass evenly: every coordinate of R x is about ||x|| / sqrt(d) in size, whatever x,
 * which bounds the error of coordinate-wise rounding and wrap-around in terms of ||x||.
 *
 * The fast Walsh-Hadamard transform is written with existing operations only: m butterfly
 * stages, each a reshape to [d / 2h, 2, h], two slices, their sum and difference, and a
 * concat. So gradients, placement and privacy types and every backend come with them. H is
 * symmetric and H H = d I, so the inverse is D H / sqrt(d): the same stages, then the signs.
 *
 * The signs are meant to be the SAME wherever the same key is used: clients rotate with a
 * shared key and the server inverts their sum with it. They are no privacy noise, so a draw
 * from a key that is equal on every client is allowed here (unlike uniform() etc., FT317).
 */
import type { Failures, Message, Presumed, Validate } from "../../types/errors.js";
import type { JoinPlacement } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { DType, DTypeOf, Dim, Placement, PlacementOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import { emitBinary } from "./elementwise.js";
import type { KeyCheck } from "./random.js";
import { currentGraph, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";

type Mutable<S> = { -readonly [K in keyof S]: S[K] };

/** FT205 unless X is float32 (a tensor whose dtype is not known statically is checked while tracing). */
type FloatCheck<Op extends string, X> = [X] extends [Tensor]
  ? DTypeOf<X> extends "float32"
    ? never
    : DType extends DTypeOf<X>
      ? never
      : Message<"FT205", { op: Op; want: "f32"; got: DTypeOf<X> extends "int32" ? "i32" : "bool" }>
  : Message<"FT205", { op: Op; want: "f32"; got: Print<X> }>;

/** The placement where x meets the signs drawn at the key's placement; where they cannot meet (reported on the key), x's. */
type RotatedPlacement<X, K> = X extends Tensor
  ? K extends Tensor
    ? JoinPlacement<"randomHadamard", X, K> extends infer P extends Placement
      ? P
      : PlacementOf<X>
    : PlacementOf<X>
  : never;
/** FT104/FT102/FT105/FT106 where the signs (at the key's placement) cannot meet x, as tracing reports it. */
type SignsCheck<Op extends string, X, K> = X extends Tensor ? (K extends Tensor ? Failures<JoinPlacement<Op, X, K>> : never) : never;

/** The padded length of n entries: the least power of two >= n (1 for n = 0 or 1). */
export function hadamardLength(n: number): number {
  let d = 1;
  while (d < n) d *= 2;
  return d;
}

/** The static size of x, or FT302 naming the op (named dims are bound only when the program runs). */
function staticSize(op: string, x: Tracer): number {
  let n = 1;
  for (const dim of x.shape) {
    if (typeof dim !== "number") throw ftError("FT302", { what: `${op}() operand`, why: `its shape ${printType(x.type)} must be known when the program is traced` });
    n *= dim;
  }
  return n;
}

function floatOperand(op: string, x: unknown): Tracer {
  const t = asTracer(x, op);
  if (t.dtype !== "float32") throw ftError("FT205", { op, want: "f32", got: printType(t.type) });
  return t;
}

/** d random signs +-1 (f32[d]) from the key, at the key's placement: the top bit of each random word. */
function randomSigns(op: string, key: unknown, d: number): Tracer {
  const k = asTracer(key, op);
  if (k.dtype !== "int32" || k.shape.length !== 1 || k.shape[0] !== 2) throw ftError("FT316", { op, got: printType(k.type) });
  const graph = currentGraph(op);
  const words = graph.emit("random_bits", [k], { shape: [d] }, op)[0]!;
  const negative = graph.emit("cast", [emitBinary("less", op, words, 0)], { dtype: "float32" }, op)[0]!;
  return emitBinary("sub", op, 1, emitBinary("mul", op, negative, 2));
}

/** H v / sqrt(d) for v of shape [d], d a power of two: log2 d butterfly stages. */
function normalizedWalshHadamard(op: string, v: Tracer, d: number): Tracer {
  const graph = currentGraph(op);
  const emit = (primitive: string, inputs: Tracer[], attrs = {}) => graph.emit(primitive, inputs, attrs, op)[0]!;
  let y = v;
  for (let h = 1; h < d; h *= 2) {
    const blocks = emit("reshape", [y], { shape: [d / (2 * h), 2, h] });
    const upper = emit("slice", [blocks], { begin: [0, 0, 0], size: [d / (2 * h), 1, h] });
    const lower = emit("slice", [blocks], { begin: [0, 1, 0], size: [d / (2 * h), 1, h] });
    const butterfly = emit("concat", [emitBinary("add", op, upper, lower), emitBinary("sub", op, upper, lower)], { axis: 1 });
    y = emit("reshape", [butterfly], { shape: [d] });
  }
  return emitBinary("mul", op, y, 1 / Math.sqrt(d));
}

/**
 * x (f32, any static shape) flattened, zero-padded to d = 2^m entries and rotated by the
 * randomized Hadamard transform of the key: f32[d] at the placement where x meets the key.
 * The same key gives the same rotation everywhere; inverseRandomHadamard(y, key, shape) undoes it.
 * @placement where x meets the key: a CLIENTS x with a broadcast key stays at the CLIENTS; `x@P`
 * to `f32[d]@P`.
 * @example
 * program({ u: atClients(f32([10])), key: atServer(i32([2])) }, ({ u, key }) => map((um, k) => randomHadamard(um, k), u, broadcast(key))); // {f32[16]}@CLIENTS
 */
export function randomHadamard<X extends Tensor, K extends Tensor>(
  x: Validate<X, FloatCheck<"randomHadamard", X>>,
  key: Validate<K, KeyCheck<"randomHadamard", K> | SignsCheck<"randomHadamard", X, K>>,
): Presumed<Tensor<[number], "float32", RotatedPlacement<X, K>>> {
  const op = "randomHadamard";
  const xt = floatOperand(op, x);
  const n = staticSize(op, xt);
  const d = hadamardLength(n);
  const graph = currentGraph(op);
  const flat = graph.emit("reshape", [xt], { shape: [n] }, op)[0]!;
  const padded = d === n ? flat : graph.emit("pad", [flat], { before: [0], after: [d - n] }, op)[0]!;
  return normalizedWalshHadamard(op, emitBinary("mul", op, padded, randomSigns(op, key, d)), d) as never;
}

/**
 * The inverse of randomHadamard: y (f32[d], d a power of two) rotated back with the same key,
 * then, given the shape of the original x, its first entries reshaped to it (else all d).
 * @placement as randomHadamard: `y@P` to `@P`, with the key at P or local.
 * @example
 * program({ y: atServer(f32([16])), key: atServer(i32([2])) }, ({ y, key }) => inverseRandomHadamard(y, key, [10])); // f32[10]@SERVER
 */
export function inverseRandomHadamard<Y extends Tensor, K extends Tensor, const S extends readonly Dim[] = [number]>(
  y: Validate<Y, FloatCheck<"inverseRandomHadamard", Y>>,
  key: Validate<K, KeyCheck<"inverseRandomHadamard", K> | SignsCheck<"inverseRandomHadamard", Y, K>>,
  shape?: S,
): Presumed<Tensor<Mutable<S>, "float32", RotatedPlacement<Y, K>>> {
  const op = "inverseRandomHadamard";
  const yt = floatOperand(op, y);
  const d = yt.shape.length === 1 && typeof yt.shape[0] === "number" ? yt.shape[0] : undefined;
  if (d === undefined || d < 1 || hadamardLength(d) !== d) {
    throw ftError("FT302", { what: `${op}() operand`, why: `it must be a vector of a power-of-two length (randomHadamard's result), got ${printType(yt.type)}` });
  }
  const x = emitBinary("mul", op, normalizedWalshHadamard(op, yt, d), randomSigns(op, key, d));
  if (shape === undefined) return x as never;
  const target = [...shape];
  for (const dim of target) {
    if (!(Number.isInteger(dim) && (dim as number) >= 0)) throw ftError("FT302", { what: `${op}() shape`, why: `dims are sizes >= 0, got ${String(dim)}` });
  }
  const n = (target as number[]).reduce((a, b) => a * b, 1);
  if (n > d) throw ftError("FT302", { what: `${op}() shape`, why: `[${target.join(",")}] has ${n} entries, more than the ${d} rotated ones` });
  const graph = currentGraph(op);
  const cropped = n === d ? x : graph.emit("slice", [x], { begin: [0], size: [n] }, op)[0]!;
  return graph.emit("reshape", [cropped], { shape: target }, op)[0] as never;
}
