/**
 * einsum(equation, ...operands): contractions written with index letters, as numpy's and JAX's
 * einsum. There is no einsum primitive: tracing rewrites the equation into the primitives
 * (reduce_sum, transpose, reshape, matmul, mul), so gradients, batching over clients and the
 * lowering on every backend come from their rules, and the matmul lowering picks each backend's
 * fast form (plain 2-D matmuls on wasm and cpu, one per batch element).
 *
 * Supported: one or two operands, one letter per axis, each letter at most once per operand,
 * equal dims for a shared letter (no size-1 broadcasting), the output after "->" or numpy's
 * implicit one ("ij,jk" is "ij,jk->ik"). Not supported, FT212: ellipsis ("..."), a letter
 * twice in one operand (diagonals, traces), three or more operands (write two einsum() calls).
 */
import type { Checked, Outcome } from "../../types/errors.js";
import type { EinsumShape } from "../../types/einsum.js";
import type { Binary, ElementwiseDType, ShapeOp } from "../../types/ops.js";
import type { DType, DTypeOf, PlacementOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import type { Attrs, DimValue } from "../ir/types.js";
import { parseEquation } from "./einsum-equation.js";
import { emitBinary } from "./elementwise.js";
import { currentGraph, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";

const op = "einsum";

type One<X extends Tensor, S> =
  ElementwiseDType<typeof op, "numeric", DTypeOf<X>, DTypeOf<X>> extends infer D
    ? D extends DType
      ? ShapeOp<S, D, PlacementOf<X>>
      : D
    : never;
/** The result type of einsum(E, ...Xs): the shape from the equation, placement and dtype as matmul's. */
export type EinsumOutcome<E extends string, Xs extends readonly Tensor[]> = Xs extends readonly [infer A extends Tensor, infer B extends Tensor]
  ? Binary<typeof op, "numeric", A, B, EinsumShape<E, Xs>>
  : Xs extends readonly [infer A extends Tensor]
    ? One<A, EinsumShape<E, Xs>>
    : EinsumShape<E, Xs>;

/**
 * Contracts one or two tensors as the equation says: `einsum("bhqd,bhkd->bhqk", q, k)` gives
 * attention scores, `einsum("ij->ji", x)` a transpose, `einsum("ij->i", x)` row sums.
 * @placement the operands at one placement P (or local, such as constants): result at P, computed
 * per location; SERVER with CLIENTS is FT104.
 * @example
 * program({ q: atServer(f32([2, 4, 8])), k: atServer(f32([2, 6, 8])) }, ({ q, k }) => einsum("bqd,bkd->bqk", q, k)); // f32[2,4,6]
 */
export function einsum<const E extends string, const Xs extends readonly Tensor[]>(
  equation: Checked<E, EinsumOutcome<E, Xs>>,
  ...operands: Xs
): Outcome<EinsumOutcome<E, Xs>> {
  const ts = (operands as readonly unknown[]).map((x) => asTracer(x, op));
  const { inputs, output } = parseEquation(equation as string, ts.map((t) => ({ shape: t.shape, printed: printType(t.type) })));
  for (const t of ts) {
    if (t.dtype === "bool") throw ftError("FT205", { op, want: "f32 or i32", got: "bool" });
  }
  if (ts.length === 1) return arrange(sumOut(ts[0]!, inputs[0]!, new Set(output)), output) as never;
  return contract(ts[0]!, inputs[0]!, ts[1]!, inputs[1]!, output) as never;
}

/** A traced value with the index letter of each axis. */
interface Indexed {
  readonly t: Tracer;
  readonly letters: readonly string[];
}

const emit = (primitive: string, inputs: readonly Tracer[], attrs: Attrs) => currentGraph(op).emit(primitive, inputs, attrs, op)[0]!;

/** Sums over the axes whose letters are not kept. */
function sumOut(t: Tracer, letters: readonly string[], keep: ReadonlySet<string>): Indexed {
  const axes = letters.flatMap((c, i) => (keep.has(c) ? [] : [i]));
  if (axes.length === 0) return { t, letters };
  return { t: emit("reduce_sum", [t], { axes, keepDims: false }), letters: letters.filter((c) => keep.has(c)) };
}

/** The value with its axes in the order of `order` (a permutation of its letters). */
function arrange({ t, letters }: Indexed, order: readonly string[]): Tracer {
  const perm = order.map((c) => letters.indexOf(c));
  return perm.every((p, i) => p === i) ? t : emit("transpose", [t], { perm });
}

function reshapeTo(t: Tracer, shape: readonly (number | string)[]): Tracer {
  const same = shape.length === t.shape.length && shape.every((d, i) => d === t.shape[i] || (d === -1 && t.shape[i] === null));
  return same ? t : emit("reshape", [t], { shape: [...shape] });
}

/** The dim of a group of axes merged into one: null (unknown) where a named or unknown dim is among several. */
function mergedDim(dims: readonly DimValue[]): DimValue {
  if (dims.length === 0) return 1;
  if (dims.length === 1) return dims[0]!;
  return dims.every((d) => typeof d === "number") ? (dims as number[]).reduce((a, b) => a * b, 1) : null;
}

/** A reshape target with its one unknown dim as -1 (reshape infers it), or undefined with more than one. */
function target(dims: readonly DimValue[]): (number | string)[] | undefined {
  if (dims.filter((d) => d === null).length > 1) return undefined;
  return dims.map((d) => d ?? -1);
}

function contract(a: Tracer, lettersA: string[], b: Tracer, lettersB: string[], output: readonly string[]): Tracer {
  const out = new Set(output);
  // A letter of one operand only that the output lacks is summed over first.
  const x = sumOut(a, lettersA, new Set([...out, ...lettersB]));
  const y = sumOut(b, lettersB, new Set([...out, ...x.letters]));
  const inY = new Set(y.letters);
  const inX = new Set(x.letters);
  const batch = output.filter((c) => inX.has(c) && inY.has(c));
  const contracted = x.letters.filter((c) => inY.has(c) && !out.has(c));
  const keptX = output.filter((c) => inX.has(c) && !inY.has(c));
  const keptY = output.filter((c) => inY.has(c) && !inX.has(c));
  const viaMatmul = contracted.length > 0 ? matmulContraction(x, y, { batch, contracted, keptX, keptY }) : undefined;
  return arrange(viaMatmul ?? productContraction(x, y, output, contracted), output);
}

interface Groups {
  readonly batch: readonly string[];
  readonly contracted: readonly string[];
  readonly keptX: readonly string[];
  readonly keptY: readonly string[];
}

/**
 * [...batch, keptX, contracted] @ [...batch, contracted, keptY] as one matmul, each group merged
 * into one axis; undefined where a reshape would need two dims it cannot know at trace time.
 */
function matmulContraction(x: Indexed, y: Indexed, { batch, contracted, keptX, keptY }: Groups): Indexed | undefined {
  const dimOf = (c: string) => (x.letters.includes(c) ? x.t.shape[x.letters.indexOf(c)]! : y.t.shape[y.letters.indexOf(c)]!);
  const dims = (letters: readonly string[]) => letters.map(dimOf);
  const [m, k, n] = [keptX, contracted, keptY].map((g) => mergedDim(dims(g))) as [DimValue, DimValue, DimValue];
  const targetX = target([...dims(batch), m, k]);
  const targetY = target([...dims(batch), k, n]);
  const targetOut = target(dims([...batch, ...keptX, ...keptY]));
  if (targetX === undefined || targetY === undefined || targetOut === undefined) return undefined;
  const left = reshapeTo(arrange(x, [...batch, ...keptX, ...contracted]), targetX);
  const right = reshapeTo(arrange(y, [...batch, ...contracted, ...keptY]), targetY);
  return { t: reshapeTo(emit("matmul", [left, right], {}), targetOut), letters: [...batch, ...keptX, ...keptY] };
}

/**
 * The product broadcast over every letter, then summed over the contracted ones: elementwise
 * products and outer products, and contractions whose axes cannot be merged at trace time.
 */
function productContraction(x: Indexed, y: Indexed, output: readonly string[], contracted: readonly string[]): Indexed {
  const all = [...output, ...contracted];
  const aligned = (v: Indexed): Tracer => {
    let t = arrange(v, all.filter((c) => v.letters.includes(c)));
    all.forEach((c, i) => {
      if (!v.letters.includes(c)) t = emit("expand_dims", [t], { axis: i });
    });
    return t;
  };
  const product = emitBinary("mul", op, aligned(x), aligned(y));
  const axes = contracted.map((_, i) => output.length + i);
  return { t: axes.length === 0 ? product : emit("reduce_sum", [product], { axes, keepDims: false }), letters: [...output] };
}
