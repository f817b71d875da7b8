/**
 * secureSum: the sum over clients that the server learns without seeing any client's value
 * (Bonawitz et al. 2017; TFF's SecureSumFactory). Each client quantizes its values into the
 * declared range, adds pairwise masks that cancel modulo 2^bits, and the server sums the
 * masked values; what it computes, bit for bit on every backend, is defined in
 * src/ir/secure-sum.ts, and docs/language.md (Secure aggregation) says what it protects.
 *
 * It is one IR primitive, secure_sum (TFF's federated_secure_sum), so gradients see a sum:
 * the cotangent of the result is broadcast back to the clients, straight through the
 * quantization, and a jvp's tangent is the plain sum of the tangents.
 */
import type { Message, Presumed, Validate } from "../../types/errors.js";
import type { ReduceCheck, Release } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { AtClients, DType, DTypeOf, IsAny, Leaves, Member, Placement, PlacementOf, Tensor, TreeLike } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import { checkFit, DEFAULT_MIN_CLIENTS, MAX_SECURE_BITS, quantizedSpan, type SecureDType, type SecureSumAttrs } from "../ir/secure-sum.js";
import { useReleaseKey } from "./release-keys.js";
import { checkClientsArgument, flattenTracers } from "./placement.js";
import { foldIn, type KeyCheck } from "./random.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { unflatten } from "./tree.js";

/**
 * What secureSum's argument may be: a tree of float32 or int32 values at the CLIENTS, as
 * reduceSum's (FT103 for SERVER or local leaves, FT105 for members, FT205 for bool). The one
 * place that says which client values may leave through a secure sum.
 * @example
 * // The check secureSum's parameter type applies: an FT103 message type for a SERVER tree.
 * type ServerCheck = SecureSumPlacementCheck<Tensor<[10], "float32", "server">>;
 */
export type SecureSumPlacementCheck<T> = ReduceCheck<"secureSum", T, "float32" | "int32">;

/** A release's key as the types know it: i32[2] at the SERVER. */
export type ServerKey = Tensor<[2], "int32", "server">;

/**
 * The key of a secure sum, checked as tracing checks it: FT316 for what is no key i32[2], FT312
 * for a key at the CLIENTS or a member (the primitive's rule: the pair keys derive from one key
 * the server holds), FT110 for a local key, which is a constant such as randomKey(0), a local
 * input or computed from them (src/front/release-keys.ts: never secret). A key whose placement
 * is not known statically, or `any`, is left to tracing.
 */
export type SecureKeyCheck<Op extends string, K> = IsAny<K> extends true
  ? never
  : [K] extends [ServerKey]
    ? never
    : [KeyCheck<Op, K>] extends [never]
      ? Placement extends PlacementOf<K>
        ? never
        : PlacementOf<K> extends AtClients | Member
          ? Message<"FT312", { what: "key"; why: `the pair keys derive from one key that the server holds, got ${Print<K>}` }>
          : Message<"FT110", { op: Op; option: "key"; want: LocalKeyWant; got: `${Print<K>}, a local key (a constant such as randomKey(0), or a local input)` }>
      : KeyCheck<Op, K>;
type LocalKeyWant = "a secret key: a SERVER program input (atServer(i32([2])) fed from node:crypto), or split/foldIn of one";

/**
 * secureSum's options: the modulus 2^bits, the round's SERVER `key`, the declared `range` of every
 * client value, the quantization `scale` for float32, and the SecAgg+ group settings.
 *
 * @example
 * program({ c: atClients(i32([10])), key: atServer(i32([2])) }, ({ c, key }) =>
 *   secureSum(c, { bits: 20, key, range: [0, 600] } satisfies SecureSumOptions<typeof key>),
 * );
 */
export interface SecureSumOptions<K = ServerKey, Scale extends number | string = number> {
  /** The modulus is 2^bits, 1 <= bits <= 30 (see src/ir/secure-sum.ts for why 30). */
  readonly bits: number;
  /**
   * The round's key (i32[2] at the SERVER: a program input, or split/foldIn of one; a local
   * key is a constant, FT110; a CLIENTS key, FT312): every pair key derives from it; a fresh
   * one each round (FT111).
   */
  readonly key: Validate<K, SecureKeyCheck<"secureSum", K>>;
  /** The declared range [low, high] of every client value; values outside it fail the run (FT309). */
  readonly range: readonly [number, number];
  /** float32 inputs: quantization steps per unit, q = round((x - low) * scale); int32 inputs take 1. */
  readonly scale?: Scale;
  /** Neighbours per client in the mask graph (even, >= 2; SecAgg+); every other client when absent. */
  readonly neighbours?: number;
  /** The most clients a round has, when known: then an overflow is FT311 while tracing, not only at run time. */
  readonly maxClients?: number;
  /** The fewest clients the sum takes (a whole number >= 2, default 2): a smaller cohort fails the run with FT112. */
  readonly minClients?: number;
}

/**
 * secureSum's options for the tree T: `scale` is required when a leaf of T is float32 (a float
 * has no quantization without it: FT312 while tracing otherwise), optional for int32 trees and
 * for trees whose dtypes are not known statically (checked while tracing).
 * @example
 * const options = (key: Tensor<[2], "int32", "server">): SecureSumOptionsFor<Tensor<[10], "float32", "clients">, typeof key> => ({ bits: 20, key, range: [-1, 1], scale: 1000 });
 */
export type SecureSumOptionsFor<T, K = ServerKey> = SecureSumOptions<K, ScaleOf<T>> & ScaleRequirement<T>;
type ScaleRequirement<T> = DType extends DTypeOf<Leaves<T>> ? unknown : "float32" extends DTypeOf<Leaves<T>> ? { readonly scale: number } : unknown;
/** The scale an int32 tree takes: none (or 1), FT312 otherwise, as tracing says (attrsOf). */
type ScaleOf<T> = [DTypeOf<Leaves<T>>] extends [never] ? number : [DTypeOf<Leaves<T>>] extends ["int32"] ? 1 | Message<"FT312", { what: "scale"; why: "int32 values are summed as they are: leave scale out" }> : number;

const isWhole = (n: unknown): n is number => Number.isInteger(n);

/** The primitive's attributes for leaves of `dtype`, or FT312 naming the bad option. */
function attrsOf(options: SecureSumOptions, dtype: SecureDType): SecureSumAttrs {
  const bad = (what: string, why: string) => ftError("FT312", { what, why });
  const { bits, range, neighbours } = options;
  if (!(isWhole(bits) && bits >= 1 && bits <= MAX_SECURE_BITS)) throw bad("bits", `expected a whole number in [1, ${MAX_SECURE_BITS}], got ${String(bits)}`);
  if (!Array.isArray(range) || range.length !== 2 || !range.every(Number.isFinite) || !(range[0] <= range[1])) {
    throw bad("range", `expected [low, high] with finite low <= high, got ${JSON.stringify(range)}`);
  }
  if (neighbours !== undefined && !(isWhole(neighbours) && neighbours >= 2 && neighbours % 2 === 0)) {
    throw bad("neighbours", `expected an even whole number >= 2, got ${String(neighbours)}`);
  }
  let scale = 1;
  if (dtype === "float32") {
    scale = Math.fround(options.scale ?? NaN);
    if (!(Number.isFinite(scale) && scale > 0)) throw bad("scale", `float32 values need a finite scale > 0 (quantization steps per unit), got ${String(options.scale)}`);
  } else {
    if (options.scale !== undefined && options.scale !== 1) throw bad("scale", `int32 values are summed as they are: leave scale out, got ${options.scale}`);
    if (!range.every((v) => isWhole(v) && Math.abs(v) < 2 ** 31)) throw bad("range", `int32 values need a range of int32 integers, got ${JSON.stringify(range)}`);
  }
  const minClients = options.minClients ?? DEFAULT_MIN_CLIENTS;
  if (!(isWhole(minClients) && minClients >= 2)) throw bad("minClients", `expected a whole number >= 2 (one client's sum is its value), got ${String(options.minClients)}`);
  const [low, high] = dtype === "float32" ? range.map(Math.fround) : range;
  const attrs = { bits, neighbours: neighbours ?? null, low: low!, high: high!, scale, minClients };
  if (options.maxClients !== undefined) {
    if (!(isWhole(options.maxClients) && options.maxClients >= minClients)) throw bad("maxClients", `expected a whole number >= minClients (${minClients}), got ${String(options.maxClients)}`);
    checkFit("secureSum", options.maxClients, dtype, attrs);
  } else if (quantizedSpan(dtype, attrs) >= 2 ** bits) {
    checkFit("secureSum", minClients, dtype, attrs);
  }
  return attrs;
}

/**
 * The sum over clients of every leaf of x ({T}@CLIENTS, T float32 or int32) at the SERVER,
 * computed from masked values only: `secureSum(update, { bits: 20, key, range: [-1, 1], scale: 1000 })`.
 * float32 results are exact up to the quantization: within n / (2 scale) of the true sum.
 * @placement `{T}@CLIENTS` (private allowed: the exact sum is released, with no DP) to `T@SERVER`;
 * the key a SERVER input (FT110), used once (FT111); SERVER or local values are FT103.
 */
export function secureSum<T extends TreeLike, K = ServerKey>(
  x: Validate<T, SecureSumPlacementCheck<T>>,
  options: SecureSumOptionsFor<T, K>,
): Presumed<Release<T>> {
  const op = "secureSum";
  const { leaves, def, paths } = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, leaves, paths);
  if (typeof options !== "object" || options === null) throw ftError("FT312", { what: "options", why: "expected { bits, key, range, scale? }" });
  const key = options.key as unknown as Tracer;
  if (!isTracer(key)) throw ftError("FT312", { what: "key", why: "expected a key, i32[2] at the SERVER (a program input, or split/foldIn of one)" });
  const graph = currentGraph(op);
  // The number useReleaseKey gives this release once the sums are recorded.
  const release = graph.values.releases.size;
  const sums = leaves.map((leaf, i) => {
    if (leaf.dtype !== "float32" && leaf.dtype !== "int32") throw ftError("FT205", { op, want: "f32 or i32", got: printType(leaf.type) });
    // One independent key per leaf, so that no two leaves share masks.
    const leafKey = leaves.length === 1 ? key : (foldIn(key as never, i) as unknown as Tracer);
    return graph.emit("secure_sum", [leaf, leafKey], { ...attrsOf(options as SecureSumOptions, leaf.dtype), release }, op)[0]!;
  });
  // After the sums, whose rule says what a key must be (FT312): here, that it is secret and fresh.
  useReleaseKey(op, key);
  return unflatten(def, sums) as never;
}
