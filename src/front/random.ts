/**
 * Random numbers, JAX's model: no hidden generator, only explicit keys. A key is an i32[2]
 * value like any other (made by randomKey(seed), an input declared atServer(i32([2])), a
 * broadcast); split() and foldIn() derive independent keys from it, and every draw is a pure
 * function of its key, computed by Threefry-2x32-20 (src/ir/threefry.ts) bit for bit the
 * same on every backend.
 *
 * Per-client streams: inside map(), clientIndex() is the running client's index, and
 * foldIn(key, clientIndex()) that client's own key. A draw inside map() from a key that is
 * the same on every client (a broadcast key not folded with anything per client) is FT317:
 * the runtime never hands two clients the same stream by accident.
 *
 * Gradients treat draws as constants (the primitives have no derivative and no input that
 * carries one). Shapes of draws may use named dims ("B"), bound when the program runs.
 */
import type { Fail, Failures, Message, Presumed, Validate } from "../../types/errors.js";
import type { RequireDType } from "../../types/ops.js";
import type { JoinPlacement } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { DType, Dim, DrawnFrom, Placement, PlacementOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { NORMAL_WORDS_PER_VALUE } from "../ir/normal.js";
import { printType } from "../ir/print.js";
import type { Attrs } from "../ir/primitives.js";
import { emitBinary } from "./elementwise.js";
import { currentGraph, type GraphBuilder, type Tracer } from "./trace.js";
import { asTracer } from "./values.js";

type Mutable<S> = { -readonly [K in keyof S]: S[K] };

/**
 * A PRNG key at placement P.
 *
 * @example
 * const draw = (key: Key<"server">) => uniform(key, [10]);
 * program({ key: atServer(i32([2])) }, ({ key }) => draw(key));
 */
export type Key<P extends Tensor["placement"] = Tensor["placement"]> = Tensor<[2], "int32", P>;
/** FT316 unless K is a key; a tensor whose dtype or rank is not known statically is checked while tracing. */
export type KeyCheck<Op extends string, K> = [K] extends [Key]
  ? never
  : K extends Tensor<infer S, infer D>
    ? DType extends D
      ? never
      : number extends S["length"]
        ? never
        : Message<"FT316", { op: Op; got: Print<K> }>
    : Message<"FT316", { op: Op; got: Print<K> }>;
type Keys<N extends number, P extends Key["placement"], Acc extends Key[] = []> = number extends N
  ? Key<P>[]
  : Acc["length"] extends N
    ? Acc
    : Keys<N, P, [...Acc, Key<P>]>;

const emit = (op: string, primitive: string, inputs: readonly Tracer[], attrs: Attrs = {}): Tracer =>
  currentGraph(op).emit(primitive, inputs, attrs, op)[0]!;

/** The key operand, or FT316. */
function keyOf(key: unknown, op: string): Tracer {
  const t = asTracer(key, op);
  if (t.dtype !== "int32" || t.shape.length !== 1 || t.shape[0] !== 2) throw ftError("FT316", { op, got: printType(t.type) });
  return t;
}

/** The map() function graph enclosing the current graph, if any. */
function enclosingMap(graph: GraphBuilder | undefined): GraphBuilder | undefined {
  while (graph !== undefined && graph.tracedFor !== "map") graph = graph.parent;
  return graph;
}

/**
 * Whether value `id` of `graph` may differ between clients: it derives from clientIndex(),
 * from a map() argument that is not all-equal, or from an input of a nested function whose
 * outer operand is not known yet (assumed to). Values from outside map() do not.
 */
function variesPerClient(graph: GraphBuilder, id: number, seen = new Map<number, boolean>()): boolean {
  const known = seen.get(id);
  if (known !== undefined) return known;
  seen.set(id, false);
  let varies: boolean;
  const producer = graph.nodes.find((n) => n.outputs.includes(id));
  const captured = [...graph.captures.entries()].find(([, inner]) => inner === id);
  if (producer !== undefined) varies = producer.inputs.some((input) => variesPerClient(graph, input, seen));
  else if (graph.clientIndex?.member.id === id) varies = true;
  else if (captured !== undefined) varies = graph.tracedFor !== "map" && graph.parent !== undefined && variesPerClient(graph.parent, captured[0]);
  else varies = graph.inputVaries?.[graph.inputs.indexOf(id)] ?? true;
  seen.set(id, varies);
  return varies;
}

/** FT317 for a draw inside map() from a key that is the same on every client. */
function checkPerClient(op: string, key: Tracer): void {
  const graph = currentGraph(op);
  if (enclosingMap(graph) === undefined) return;
  if (!variesPerClient(graph, graph.resolve(key, op))) throw ftError("FT317", { op });
}

function drawShape(op: string, shape: readonly Dim[]): Dim[] {
  for (const d of shape) {
    const ok = (typeof d === "string" && d.length > 0) || (Number.isInteger(d) && (d as number) >= 0);
    if (!ok) throw ftError("FT302", { what: `${op}() shape`, why: `dims are sizes >= 0 or names, got ${String(d)}` });
  }
  return [...shape];
}

/** Random int32 words of the given shape from a key. */
function bits(op: string, key: unknown, shape: readonly Dim[]): Tracer {
  const k = keyOf(key, op);
  checkPerClient(op, k);
  return emit(op, "random_bits", [k], { shape: drawShape(op, shape) });
}

/** Uniform float32 in [min, max) of random words (src/ir/threefry.ts: uniformFromWord). */
const uniformOf = (op: string, words: Tracer, min = 0, max = 1): Tracer => emit(op, "uniform_from_bits", [words], { min, max });

/**
 * A key from an integer seed in [0, 2^53): the words (floor(seed / 2^32), seed mod 2^32), as JAX's PRNGKey.
 *
 * @placement none: a local key (a constant), usable at any placement.
 */
export function randomKey(seed: number): Key<"local"> {
  const op = "randomKey";
  if (!(Number.isSafeInteger(seed) && seed >= 0)) throw ftError("FT305", { option: "randomKey seed", why: `${seed} is not an integer in [0, 2^53)` });
  const words = [Math.floor(seed / 2 ** 32) | 0, seed % 2 ** 32 | 0];
  return currentGraph(op).emit("constant", [], { value: words, dtype: "int32", shape: [2] }, op)[0] as never;
}

/**
 * n new independent keys (default 2) from a key: `const [a, b] = split(key)`.
 *
 * @placement the keys are at the key's placement: `Key<P>` to n `Key<P>`.
 * @example
 * program({ key: atServer(i32([2])) }, ({ key }) => {
 *   const [a, b] = split(key);
 *   return add(uniform(a, [3]), normal(b, [3]));
 * });
 */
export function split<K extends Tensor, const N extends number = 2>(
  key: Validate<K, KeyCheck<"split", K>>,
  n?: N,
): Presumed<Keys<N, PlacementOf<K>>> {
  const op = "split";
  const count = n ?? 2;
  if (!(Number.isInteger(count) && count >= 1)) throw ftError("FT302", { what: "split() count", why: `${count} is not an integer >= 1` });
  const rows = bits(op, key, [count, 2]);
  return Array.from({ length: count }, (_, i) =>
    emit(op, "reshape", [emit(op, "slice", [rows], { begin: [i, 0], size: [1, 2] })], { shape: [2] }),
  ) as never;
}

/** FT205 for data that is not i32; FT104/FT102/FT105/FT106 when the key and the data cannot meet (a SERVER key and clientIndex()). */
type FoldInCheck<K, D> = D extends Tensor
  ? [RequireDType<"foldIn", D, "int32">] extends [Fail<infer M>]
    ? M
    : K extends Key
      ? Failures<JoinPlacement<"foldIn", K, D>>
      : never
  : never;
/**
 * The key's placement joined with the data's; where they cannot meet (reported on the data),
 * the data's, which is what the user presumably meant: a key per client from clientIndex().
 */
type FoldInPlacement<K, D> = D extends Tensor
  ? K extends Key
    ? JoinPlacement<"foldIn", K, D> extends infer P extends Placement
      ? P
      : PlacementOf<D>
    : PlacementOf<D>
  : PlacementOf<K>;

/**
 * A new key from a key and an int32 (a number or an i32[] value): different data give
 * independent keys. foldIn(key, clientIndex()) inside map() is the running client's key.
 * @placement the key's placement, joined with the data's: foldIn(key, clientIndex()) inside map is
 * a member key, a different one per client.
 */
export function foldIn<K extends Tensor, D extends number | Tensor<[]>>(
  key: Validate<K, KeyCheck<"foldIn", K>>,
  data: Validate<D, FoldInCheck<K, D>>,
): Presumed<Key<FoldInPlacement<K, D>>> {
  const op = "foldIn";
  const k = keyOf(key, op);
  let counter: Tracer;
  if (typeof data === "number") {
    if (!Number.isInteger(data)) throw ftError("FT302", { what: "foldIn() data", why: `${data} is not an integer` });
    counter = currentGraph(op).emit("constant", [], { value: [data | 0, 1], dtype: "int32", shape: [2] }, op)[0]!;
  } else {
    const d = asTracer(data, op);
    if (d.dtype !== "int32" || d.shape.length !== 0) throw ftError("FT205", { op, want: "i32[]", got: printType(d.type) });
    const one = currentGraph(op).emit("constant", [], { value: [1], dtype: "int32", shape: [1] }, op)[0]!;
    counter = emit(op, "concat", [emit(op, "reshape", [d], { shape: [1] }), one], { axis: 0 });
  }
  return emit(op, "threefry2x32", [k, counter]) as never;
}

/**
 * Inside map()'s function: the index of the client running it, 0 to C-1 (FT318 elsewhere).
 *
 * @placement only inside map's function, where it is the running client's member (an int32
 * scalar); FT318 elsewhere.
 */
export function clientIndex(): Tensor<[], "int32", "member"> {
  const op = "clientIndex";
  const mapGraph = enclosingMap(currentGraph(op));
  if (mapGraph === undefined) throw ftError("FT318", {});
  if (mapGraph.clientIndex === undefined) {
    const outer = mapGraph.parent!.emit("client_iota", [], {}, op)[0]!;
    const member = mapGraph.addInput({ shape: [], dtype: "int32", placement: "member" });
    mapGraph.clientIndex = { outer, member };
  }
  return mapGraph.clientIndex.member as never;
}

/**
 * A draw's type: at its key's placement. A draw from a SERVER key also records the key
 * (DrawnFrom), so that reading it inside map()'s function is FT102 naming the key, the value
 * that belongs broadcast and folded with clientIndex(), rather than the draw.
 */
type Draw<K, S extends readonly Dim[], D extends "float32" | "int32" | "bool"> = PlacementOf<K> extends "server"
  ? Tensor<Mutable<S>, D, "server"> & DrawnFrom<K>
  : Tensor<Mutable<S>, D, PlacementOf<K>>;

/**
 * Uniform float32 in [min, max) (default [0, 1)); [0, 1) values are multiples of 2^-23, as JAX's.
 *
 * @placement a key at placement P gives draws at P (a SERVER key: SERVER values; a client's key
 * inside map: that client's); a CLIENTS key drawn from inside map without foldIn(key,
 * clientIndex()) is FT317.
 * @example
 * program({ key: atServer(i32([2])) }, ({ key }) => uniform(key, [2, 3], { min: -1, max: 1 })); // f32[2,3]@SERVER
 */
export function uniform<K extends Tensor, const S extends readonly Dim[]>(
  key: Validate<K, KeyCheck<"uniform", K>>,
  shape: S,
  range: { readonly min?: number; readonly max?: number } = {},
): Presumed<Draw<K, S, "float32">> {
  const op = "uniform";
  const [min, max] = [range.min ?? 0, range.max ?? 1];
  if (!(Number.isFinite(min) && Number.isFinite(max) && min < max)) throw ftError("FT302", { what: "uniform() range", why: `[${min}, ${max}) is not a finite, non-empty range` });
  return uniformOf(op, bits(op, key, shape), min, max) as never;
}

/**
 * Standard normal float32: the inverse CDF of a 64-bit uniform, one Threefry block (two
 * words) per value, so the tails reach +-9.16 sigma and a draw is within total variation
 * 2^-63 of N(0, 1) beyond a rounding finer than float32's (normalSamplerDeltaPerDraw);
 * computed from correctly rounded float32 operations only (src/ir/normal.ts), so the same
 * bits on every backend.
 * @placement a key at placement P gives draws at P (a SERVER key: SERVER values; a client's key
 * inside map: that client's); a CLIENTS key drawn from inside map without foldIn(key,
 * clientIndex()) is FT317.
 */
export function normal<K extends Tensor, const S extends readonly Dim[]>(
  key: Validate<K, KeyCheck<"normal", K>>,
  shape: S,
): Presumed<Draw<K, S, "float32">> {
  const op = "normal";
  return emit(op, "normal_from_bits", [bits(op, key, [...shape, NORMAL_WORDS_PER_VALUE])]) as never;
}

/**
 * true with probability p (uniform < p), as bool.
 *
 * @placement a key at placement P gives draws at P (a SERVER key: SERVER values; a client's key
 * inside map: that client's); a CLIENTS key drawn from inside map without foldIn(key,
 * clientIndex()) is FT317.
 * @example
 * program({ key: atServer(i32([2])) }, ({ key }) => bernoulli(key, 0.1, [784])); // bool[784]@SERVER, true with p 0.1
 */
export function bernoulli<K extends Tensor, const S extends readonly Dim[]>(
  key: Validate<K, KeyCheck<"bernoulli", K>>,
  p: number,
  shape: S,
): Presumed<Draw<K, S, "bool">> {
  return bernoulliMask("bernoulli", key, p, shape) as never;
}

/** bernoulli() for the operation `op` (dropout() draws its mask with it). */
export function bernoulliMask(op: string, key: unknown, p: number, shape: readonly Dim[]): Tracer {
  if (!(p >= 0 && p <= 1)) throw ftError("FT302", { what: `${op}() probability`, why: `${p} is not a probability in [0, 1]` });
  return emitBinary("less", op, uniformOf(op, bits(op, key, shape)), p);
}

/**
 * A uniformly random permutation of 0..n-1 (i32[n]): the ranks of n random words, ties
 * broken by position. Exact integer comparisons only, O(n^2) work and memory: meant for
 * the sizes of clients, batches and cohorts, not millions.
 * @placement a key at placement P gives draws at P (a SERVER key: SERVER values; a client's key
 * inside map: that client's); a CLIENTS key drawn from inside map without foldIn(key,
 * clientIndex()) is FT317.
 * @example
 * program({ key: atServer(i32([2])) }, ({ key }) => randomPermutation(key, 10)); // i32[10]@SERVER
 */
export function randomPermutation<K extends Tensor, const N extends number>(
  key: Validate<K, KeyCheck<"randomPermutation", K>>,
  n: N,
): Presumed<Tensor<[N], "int32", PlacementOf<K>>> {
  const op = "randomPermutation";
  if (!(Number.isInteger(n) && n >= 1)) throw ftError("FT302", { what: "randomPermutation() n", why: `${n} is not an integer >= 1` });
  const words = bits(op, key, [n]);
  const mine = emit(op, "reshape", [words], { shape: [n, 1] });
  const others = emit(op, "reshape", [words], { shape: [1, n] });
  const earlier = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (j < i ? 1 : 0)));
  const earlierMask = currentGraph(op).emit("constant", [], { value: earlier, dtype: "bool", shape: [n, n] }, op)[0]!;
  const tieBefore = emit(op, "logical_and", [emit(op, "equal", [others, mine]), earlierMask]);
  const before = emit(op, "logical_or", [emit(op, "less", [others, mine]), tieBefore]);
  return emit(op, "reduce_sum", [emit(op, "cast", [before], { dtype: "int32" })], { axes: [1], keepDims: false }) as never;
}
