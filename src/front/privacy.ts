/**
 * Privacy in the language (docs/language.md "Privacy"): dpSum, the differentially private sum
 * that may take private client data to the SERVER, and the check that a program's outputs hold
 * no private CLIENTS value. The taint itself is src/ir/privacy.ts (trace time) and the private
 * placements of types/placement.ts (tsc).
 */
import type { Message, Presumed, Validate } from "../../types/errors.js";
import type { ReduceCheck, Release } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { Tensor, TreeLike, Typed } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { requireDType } from "../ir/dtypes.js";
import type { Attrs } from "../ir/primitives.js";
import { printType } from "../ir/print.js";
import { positiveOption, privacyError } from "../ir/privacy.js";
import * as elementwise from "./elementwise.js";
import { broadcast, checkClientsArgument, flattenTracers, gotAt, map } from "./placement.js";
import * as random from "./random.js";
import * as tensorOps from "./tensor-ops.js";
import { isKept } from "./client-state.js";
import { programInputOf, useReleaseKey } from "./release-keys.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { describeValue, unflatten } from "./tree.js";

/** A scalar option of dpSum: a number, or an f32[] at the SERVER or local (never chosen by the clients). */
type ScalarOption = number | Tensor<[], "float32", "server" | "local">;
/** A SERVER key: a local one is a constant (randomKey) or a local input, never secret (FT110; src/front/release-keys.ts checks the rest while tracing). */
type KeyOption = Tensor<[2], "int32", "server">;
type OptionCheck<Name extends string, V, Want, Text extends string, Op extends string = "dpSum"> = V extends Want
  ? V extends number
    ? PositiveCheck<Name, V, Op>
    : never
  : Message<"FT110", { op: Op; option: Name; want: Text; got: V extends Typed ? Print<V> : "a value that is no tensor" }>;
/** FT110 for a numeric literal that is 0 or negative (a plain `number` is checked while tracing). */
type PositiveCheck<Name extends string, V extends number, Op extends string> = number extends V
  ? never
  : V extends 0 | -0
    ? Message<"FT110", { op: Op; option: Name; want: Want["positive"]; got: "0" }>
    : `${V}` extends `-${string}`
      ? Message<"FT110", { op: Op; option: Name; want: Want["positive"]; got: `${V}` }>
      : never;
const want = { scalar: "a number or an f32[] at the SERVER", key: "a random key (i32[2]) at the SERVER", positive: positiveOption } as const;
type Want = typeof want;

/**
 * dpSum's options; `Op` is the aggregator that their FT110 messages name (dpSum, or dpMean for its own).
 *
 * @example
 * program({ u: atClients(f32([10]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
 *   dpSum(u, { clip: 1, noiseMultiplier: 1.1, key }),
 * );
 */
export interface DpSumOptions<C, Z, K, Op extends string = "dpSum"> {
  /** The clip norm C: each client's whole tree is scaled to global L2 norm at most C. */
  readonly clip: Validate<C, OptionCheck<"clip", C, ScalarOption, Want["scalar"], Op>>;
  /** z: the sum gets N(0, (z C)^2) noise on every coordinate, at the SERVER. */
  readonly noiseMultiplier: Validate<Z, OptionCheck<"noiseMultiplier", Z, ScalarOption, Want["scalar"], Op>>;
  /** The key the noise is drawn from (one independent key per leaf, split from it). */
  readonly key: Validate<K, OptionCheck<"key", K, KeyOption, Want["key"], Op>>;
}

/**
 * dpMean's options: dpSum's, and the cohort size the noised sum is divided by.
 *
 * @example
 * program({ u: atClients(f32([10]), { private: true }), key: atServer(i32([2])) }, ({ u, key }) =>
 *   dpMean(u, { clip: 1, noiseMultiplier: 1.1, key, expectedClients: 100 }),
 * );
 */
export interface DpMeanOptions<C, Z, K, M> extends DpSumOptions<C, Z, K, "dpMean"> {
  /** m, the expected number of clients in the cohort (a number or an f32[] at the SERVER, > 0): the result is the noised sum / m. */
  readonly expectedClients: Validate<M, OptionCheck<"expectedClients", M, ScalarOption, Want["scalar"], "dpMean">>;
}

// The operations through loose signatures: their checks run while tracing, as in the library.
type Loose = (...args: unknown[]) => Tracer;
const ops = { ...elementwise, ...tensorOps, ...random } as unknown as Record<
  "add" | "mul" | "div" | "maximum" | "sqrt" | "sum" | "normal" | "split",
  Loose
>;

/**
 * The Gaussian mechanism over the clients, as TFF's DifferentiallyPrivateFactory (McMahan et
 * al. 2018): each client's tree is clipped to global L2 norm `clip` (delta min(1, C/||delta||)),
 * the clipped trees are summed, and the SERVER adds N(0, (noiseMultiplier clip)^2) to every
 * coordinate, drawn from `key`. One client changes the sum by at most `clip` in L2 norm, so
 * the result is differentially private and may carry private client data (FT109 does not
 * apply): `{T}@CLIENTS` to `T@SERVER`, float32 leaves only.
 * @placement `{T}@CLIENTS` (private allowed) to `T@SERVER`, a release; options SERVER or local
 * (FT110); the key a secret SERVER input, used once (FT110, FT111).
 */
export function dpSum<T extends TreeLike, const C, const Z, K>(
  x: Validate<T, ReduceCheck<"dpSum", T, "float32">>,
  options: DpSumOptions<C, Z, K>,
): Presumed<Release<T>> {
  return gaussianSum("dpSum", x, options) as never;
}

/**
 * The DP mean of TFF's DifferentiallyPrivateFactory with a fixed denominator: dpSum(x, options)
 * divided by `expectedClients` (m), the expected cohort size, not the cohort's actual size, which
 * would depend on who took part (McMahan et al. 2018's fixed-denominator estimator). Each leaf's
 * noise has standard deviation z C / m. It is dpSum and a division, so the key rules, the
 * release listed in program.privacy (as a dpSum) and its gradients are dpSum's.
 * @placement as dpSum: `{T}@CLIENTS` (private allowed) to `T@SERVER`, a release; expectedClients a
 * number or an f32[] at the SERVER.
 */
export function dpMean<T extends TreeLike, const C, const Z, K, const M>(
  x: Validate<T, ReduceCheck<"dpMean", T, "float32">>,
  options: DpMeanOptions<C, Z, K, M>,
): Presumed<Release<T>> {
  const op = "dpMean";
  if (typeof options !== "object" || options === null) throw ftError("FT110", { op, option: "options", want: "{ clip, noiseMultiplier, key, expectedClients }", got: describeValue(options) });
  const m = scalarOption(op, "expectedClients", options.expectedClients);
  const { leaves, def } = flattenTracers(gaussianSum(op, x, options), "dpMean() sum");
  return unflatten(
    def,
    leaves.map((sum) => ops.div(sum, m)),
  ) as never;
}

/** dpSum, its messages naming `op` (the user's call); its sums are marked "dpSum" in the IR whatever op is. */
function gaussianSum(op: string, x: unknown, options: { readonly clip: unknown; readonly noiseMultiplier: unknown; readonly key: unknown }): unknown {
  const xs = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, xs.leaves, xs.paths);
  for (const leaf of xs.leaves) requireDType(op, leaf.dtype, "float32");
  if (typeof options !== "object" || options === null) throw ftError("FT110", { op, option: "options", want: "{ clip, noiseMultiplier, key }", got: describeValue(options) });
  const clip = scalarOption(op, "clip", options.clip);
  const noiseMultiplier = scalarOption(op, "noiseMultiplier", options.noiseMultiplier);
  const key = keyOption(op, options.key);
  const release = useReleaseKey(op, key);

  // Each client scales its whole tree by C / max(||x||, C), in the order of the library's
  // clipToNorm (sum of squares leaf by leaf, added left to right), so the numbers are the same.
  const serverClip = isTracer(clip) && clip.placement === "server";
  const clipped = map(
    ((...members: Tracer[]) => {
      const c = serverClip ? members.pop()! : clip;
      const norm = ops.sqrt(members.map((leaf) => ops.sum(ops.mul(leaf, leaf))).reduce((total, part) => ops.add(total, part)));
      const scale = ops.div(c, ops.maximum(norm, c));
      return members.map((leaf) => ops.mul(leaf, scale));
    }) as never,
    ...((serverClip ? [...xs.leaves, broadcast(clip as never)] : xs.leaves) as never[]),
  ) as unknown as Tracer[];

  const graph = currentGraph(op);
  const recorded = releaseAttrs(release, clip, noiseMultiplier);
  const sums = clipped.map((leaf) => graph.emit("federated_sum", [leaf], { aggregator: "dpSum", ...recorded }, op)[0]!);
  const std = typeof noiseMultiplier === "number" && typeof clip === "number" ? noiseMultiplier * clip : ops.mul(noiseMultiplier, clip);
  const noise = flattenTracers(gaussianTreeNoise(unflatten(xs.def, sums), std, key), `${op}() noise`).leaves;
  return unflatten(
    xs.def,
    sums.map((sum, i) => ops.add(sum, noise[i])),
  );
}

/**
 * Gaussian noise N(0, std^2) with the structure of a SERVER tree, one independent key per leaf split from `key`.
 *
 * @example
 * // Inside a traced program: noise with the structure of a SERVER tree of params.
 * program({ w: atServer({ a: f32([3]), b: f32([1]) }), key: atServer(i32([2])) }, ({ w, key }) => add(w, gaussianTreeNoise(w, 0.1, key) as typeof w));
 */
export function gaussianTreeNoise(like: unknown, std: unknown, key: unknown): unknown {
  const { leaves, def } = flattenTracers(like, "parameter tree");
  const keys = leaves.length === 1 ? [key] : (ops.split(key, leaves.length) as unknown as Tracer[]);
  return unflatten(
    def,
    leaves.map((leaf, i) => ops.mul(ops.normal(keys[i], leaf.shape), std)),
  );
}

function scalarOption(op: string, option: DpSumOption | "expectedClients", value: unknown): Tracer | number {
  if (typeof value === "number") {
    if (!(value > 0 && Number.isFinite(value))) throw ftError("FT110", { op, option, want: want.positive, got: String(value) });
    return value;
  }
  if (!isTracer(value)) throw ftError("FT110", { op, option, want: want.scalar, got: "a value that is no tensor" });
  if (!isServerOrLocal(value) || value.dtype !== "float32" || value.shape.length !== 0) throw ftError("FT110", { op, option, want: want.scalar, got: printType(value.type) });
  return value;
}

function keyOption(op: string, value: unknown): Tracer {
  if (!isTracer(value)) throw ftError("FT110", { op, option: "key", want: want.key, got: "a value that is no tensor" });
  if (!isServerOrLocal(value) || value.dtype !== "int32" || value.shape.length !== 1 || value.shape[0] !== 2) {
    throw ftError("FT110", { op, option: "key", want: want.key, got: printType(value.type) });
  }
  return value;
}

type DpSumOption = "clip" | "noiseMultiplier";

/**
 * What dpSum's sums record of the release (program.privacy, src/ir/print-privacy.ts): its
 * number in the program, and each option as a constant, or the program input (its position
 * among the inputs) it is, which program.run checks is > 0 (FT110), or null when computed.
 */
function releaseAttrs(release: number, clip: Tracer | number, noiseMultiplier: Tracer | number): Attrs {
  const option = (name: DpSumOption, value: Tracer | number): Attrs =>
    typeof value === "number" ? { [name]: value } : { [name]: null, [`${name}Input`]: programInputOf(value) ?? null };
  return { release, ...option("clip", clip), ...option("noiseMultiplier", noiseMultiplier) };
}

const isServerOrLocal = (t: Tracer): boolean => (t.placement === "server" || t.placement === "local") && t.type.private !== true;

/** FT109 for the first leaf of a program's result that holds private data and is no client state (types/placement.ts OutputCheck). */
export function checkOutputsPrivacy(leaves: readonly Tracer[], paths: readonly string[]): void {
  const leak = leaves.findIndex((t) => t.type.private === true && !isKept(t));
  if (leak >= 0) throw privacyError("the program's result", gotAt(leaves[leak]!.type, paths[leak]!));
}
