/**
 * distributedDpSum: the sum of the clients' trees with distributed DP (the distributed discrete
 * Gaussian of Kairouz, Liu and Steinke 2021; TFF's DistributedDpSumFactory). Like dpSum it may
 * take private client data to the SERVER, but the noise is added by the clients, so the server
 * (and, in deployment, the SecAgg+ protocol's server) learns only the noisy sum.
 *
 * Per client (inside one map): the whole tree flattened, clipped to L2 norm `clip`, rotated with
 * randomHadamard(., rotationKey) (shared by every client and the server), scaled by gamma,
 * rounded to integers with conditional randomized rounding (the first of `tries` roundings whose
 * norm is at most B, else zeros: the bound holds whatever happens), plus one discrete Gaussian
 * draw per coordinate (src/lib/privacy/discrete-gaussian.ts's alias table, five Threefry words
 * a draw from the client's own key), wrapped mod 2^bits. The SERVER sums mod 2^bits (two int32
 * federated sums of the low 15 bits and the rest, which cannot overflow for up to 65535
 * clients), takes the result to [-2^(bits-1), 2^(bits-1)), divides by gamma, rotates back and
 * unflattens. Calibration and accounting: src/lib/privacy/distributed-dp.ts, from the options,
 * which are numbers known when the program is traced.
 *
 * The clients' keys are a CLIENTS value, one key per client: in the simulation the runner
 * derives them from the run's secret (src/lib/privacy/secret.ts), in deployment each client
 * draws them from its own CSPRNG. A program cannot check their secrecy; the rotation key, a
 * SERVER key, is checked and used up as dpSum's key is (FT110, FT111), which also gives the
 * release its number in program.privacy.
 */
import type { Message, Presumed, Validate } from "../../types/errors.js";
import type { Moved, ReduceCheck } from "../../types/placement.js";
import type { Print } from "../../types/print.js";
import type { AtClients, IsAny, Placement, PlacementOf, Tensor, TreeLike, Typed } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { requireDType } from "../ir/dtypes.js";
import type { Attrs } from "../ir/primitives.js";
import { printType } from "../ir/print.js";
import { discreteGaussianTable, DISCRETE_GAUSSIAN_WORDS, type DiscreteGaussianTable } from "../ir/discrete-gaussian.js";
import { calibrateDistributedDp, sumOfDiscreteGaussiansTau, type DistributedDpCalibration } from "../ir/distributed-dp-calibration.js";
import { emitBinary } from "./elementwise.js";
import { broadcast, checkClientsArgument, flattenTracers, map } from "./placement.js";
import { split, uniform } from "./random.js";
import { useReleaseKey } from "./release-keys.js";
import { hadamardLength, inverseRandomHadamard, randomHadamard } from "./rotation.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { describeValue, unflatten } from "./tree.js";

/**
 * distributedDpSum's options: the clip norm, the noise multiplier (for minClients clients), the
 * modulus bits, the cohort bounds, the SERVER rotation key and the per-client keys, and the
 * rounding's tuning.
 *
 * @example
 * const options = (rotationKey: Tensor<[2], "int32", "server">, clientKeys: Tensor<[2], "int32", "clients">): DistributedDpSumOptions<typeof rotationKey, typeof clientKeys> =>
 *   ({ clip: 1, noiseMultiplier: 1, bits: 20, minClients: 5, maxClients: 100, rotationKey, clientKeys });
 */
export interface DistributedDpSumOptions<RK, CK> {
  /** c: each client's whole tree is clipped to this L2 norm. */
  readonly clip: number;
  /** z: with minClients clients the sum's noise has standard deviation about z c. */
  readonly noiseMultiplier: number;
  /** The modulus 2^bits of the sum (2 to 30). */
  readonly bits: number;
  /** The fewest clients whose noise the sum carries: the noise is calibrated for them. */
  readonly minClients: number;
  /** The most clients summed (at most 65535): the scale is chosen so that their sum fits 2^bits. */
  readonly maxClients: number;
  /** The rotation's key, a secret SERVER key (as dpSum's), fresh each release. */
  readonly rotationKey: Validate<RK, KeyOptionCheck<"rotationKey", RK, "server">>;
  /** Each client's key for its rounding and noise: a CLIENTS i32[2], different per client. */
  readonly clientKeys: Validate<CK, KeyOptionCheck<"clientKeys", CK, AtClients>>;
  /** Conditional rounding's beta (default exp(-1/2)). */
  readonly beta?: number;
  /** Standard deviations of the aggregate that fit 2^bits (default 4). */
  readonly kStddevs?: number;
  /** Roundings a client tries before it sends zeros (default 4). */
  readonly tries?: number;
}

/** The texts of keyOption's FT110, by option. */
const keyWants = { rotationKey: "a random key (i32[2]) at the SERVER", clientKeys: "a key per client (i32[2] at the CLIENTS)" } as const;
/** FT110, as keyOption says it while tracing, for a key option that is not i32[2] at P (one not known statically is checked there). */
type KeyOptionCheck<Option extends keyof typeof keyWants, K, P extends Placement> = IsAny<K> extends true
  ? never
  : [K] extends [Tensor<[2], "int32", P>]
    ? never
    : K extends Typed
      ? Placement extends PlacementOf<K>
        ? never
        : Message<"FT110", { op: "distributedDpSum"; option: Option; want: (typeof keyWants)[Option]; got: Print<K> }>
      : Message<"FT110", { op: "distributedDpSum"; option: Option; want: (typeof keyWants)[Option]; got: "a value that is no tensor" }>;

/** Split of each client's wrapped value for the sums: its low bits, summed without overflow. */
const LOW_BITS = 15;

const numberOption = (op: string, option: string, value: unknown): number => {
  if (typeof value !== "number" || !Number.isFinite(value)) throw ftError("FT110", { op, option, want: "a finite number known when the program is traced", got: typeof value === "number" ? String(value) : describeValue(value) });
  return value;
};

type Emit = (primitive: string, inputs: Tracer[], attrs?: Attrs) => Tracer;

/** sum(v * v) of a [d] vector in float32, by partial sums of at most 64 terms (bounding its rounding, see the threshold below). */
function blockedSquares(emit: Emit, op: string, v: Tracer, d: number): { sum: Tracer; levels: number } {
  const dims: number[] = [];
  for (let rest = d; rest > 1; rest /= Math.min(64, rest)) dims.push(Math.min(64, rest));
  let s = emit("reshape", [emitBinary("mul", op, v, v)], { shape: dims.length === 0 ? [1] : dims });
  for (let level = Math.max(1, dims.length); level > 0; level--) s = emit("reduce_sum", [s], { axes: [level - 1], keepDims: false });
  return { sum: s, levels: Math.max(1, dims.length) };
}

/** d discrete Gaussian draws (int32 [d]) from the table, five words each from `key`. */
function discreteGaussianNoise(emit: Emit, op: string, table: DiscreteGaussianTable, key: Tracer, d: number): Tracer {
  const constant = (value: Int32Array, shape: number[]) => emit("constant", [], { value: Array.from(value), dtype: "int32", shape });
  const words = emit("random_bits", [key], { shape: [d, DISCRETE_GAUSSIAN_WORDS] });
  const column = emitBinary("mod", op, emit("reshape", [emit("slice", [words], { begin: [0, 0], size: [d, 1] })], { shape: [d] }), table.size);
  const value = emit("take", [constant(table.value, [table.size]), column], { axis: 0 });
  const alias = emit("take", [constant(table.alias, [table.size]), column], { axis: 0 });
  const thresholds = emit("take", [constant(table.threshold, [table.size, 4]), column], { axis: 0 });
  // Unsigned order as signed order: each word's unsigned value minus 2^31 (as the table stores its thresholds).
  const raw = emit("slice", [words], { begin: [0, 1], size: [d, 4] });
  const shifted = emit("where", [
    emitBinary("less", op, raw, 0),
    emitBinary("add", op, emitBinary("add", op, raw, 2147483647), 1),
    emitBinary("sub", op, emitBinary("sub", op, raw, 2147483647), 1),
  ]);
  const word = (t: Tracer, j: number) => emit("reshape", [emit("slice", [t], { begin: [0, j], size: [d, 1] })], { shape: [d] });
  let below = emitBinary("less", op, word(shifted, 3), word(thresholds, 3));
  for (let j = 2; j >= 0; j--) {
    const [u, t] = [word(shifted, j), word(thresholds, j)];
    below = emitBinary("logical_or", op, emitBinary("less", op, u, t), emitBinary("logical_and", op, emitBinary("equal", op, u, t), below));
  }
  return emit("where", [below, value, alias]);
}

/**
 * The clients' trees summed with distributed DP: `{T}@CLIENTS` (private allowed) to `T@SERVER`,
 * float32 leaves of static shapes. See the header for the steps.
 * @placement `{T}@CLIENTS` (private allowed) to `T@SERVER`, a release; rotationKey a secret SERVER
 * input used once (FT110, FT111); clientKeys a key per client at the CLIENTS.
 * @example
 * program({ u: atClients(f32([10]), { private: true }), rk: atServer(i32([2])), ck: atClients(i32([2])) }, ({ u, rk, ck }) =>
 *   distributedDpSum(u, { clip: 1, noiseMultiplier: 1, bits: 20, minClients: 5, maxClients: 100, rotationKey: rk, clientKeys: ck }),
 * );
 */
export function distributedDpSum<T extends TreeLike, RK, CK>(
  x: Validate<T, ReduceCheck<"distributedDpSum", T, "float32">>,
  options: DistributedDpSumOptions<RK, CK>,
): Presumed<Moved<T, "server">> {
  const op = "distributedDpSum";
  const xs = flattenTracers(x, `${op}() argument`);
  checkClientsArgument(op, xs.leaves, xs.paths);
  if (typeof options !== "object" || options === null) throw ftError("FT110", { op, option: "options", want: "{ clip, noiseMultiplier, bits, minClients, maxClients, rotationKey, clientKeys }", got: describeValue(options) });
  const sizes = xs.leaves.map((leaf) => {
    requireDType(op, leaf.dtype, "float32");
    if (!leaf.shape.every((dim) => typeof dim === "number")) throw ftError("FT302", { what: `${op}() argument`, why: `its shapes must be known when the program is traced, got ${printType(leaf.type)}` });
    return (leaf.shape as number[]).reduce((a, b) => a * b, 1);
  });
  const n = sizes.reduce((a, b) => a + b, 0);
  const d = hadamardLength(n);
  const tries = options.tries ?? 4;
  if (!(Number.isInteger(tries) && tries >= 1)) throw ftError("FT110", { op, option: "tries", want: "a whole number >= 1", got: String(tries) });
  const cal = calibrateDistributedDp({
    clip: numberOption(op, "clip", options.clip),
    noiseMultiplier: numberOption(op, "noiseMultiplier", options.noiseMultiplier),
    bits: numberOption(op, "bits", options.bits),
    minClients: numberOption(op, "minClients", options.minClients),
    maxClients: numberOption(op, "maxClients", options.maxClients),
    dimension: d,
    ...(options.beta === undefined ? {} : { beta: numberOption(op, "beta", options.beta) }),
    ...(options.kStddevs === undefined ? {} : { kStddevs: numberOption(op, "kStddevs", options.kStddevs) }),
  });
  if (cal.maxClients > 65535) throw ftError("FT346", { why: `maxClients ${cal.maxClients} is above 65535, the most whose int32 sums cannot overflow` });
  if (cal.scale * cal.clip >= 2 ** 23) throw ftError("FT346", { why: `with ${cal.bits} bits a coordinate may reach ${Math.round(cal.scale * cal.clip)}, beyond float32's exact integers: lower bits` });
  const rotationKey = keyOption(op, "rotationKey", options.rotationKey, (t) => t.placement === "server" || t.placement === "local");
  const clientKeys = keyOption(op, "clientKeys", options.clientKeys, (t) => t.placement === "clients");
  const release = useReleaseKey(op, rotationKey);
  const table = discreteGaussianTable(cal.localSigma);
  // The graph being recorded when called: map()'s function inside it, the program's outside.
  const emit: Emit = (primitive, inputs, attrs = {}) => currentGraph(op).emit(primitive, inputs, attrs, op)[0]!;

  const parts = map(
    ((...members: Tracer[]) => {
      const clientKey = members.pop()!;
      const rk = members.pop()!;
      const flat = members.length === 1 ? emit("reshape", [members[0]!], { shape: [n] }) : emit("concat", members.map((m, i) => emit("reshape", [m], { shape: [sizes[i]!] })), { axis: 0 });
      const norm = emit("sqrt", [emit("reduce_sum", [emitBinary("mul", op, flat, flat)], { axes: null, keepDims: false })]);
      const clipped = emitBinary("mul", op, flat, emitBinary("div", op, cal.clip, emitBinary("maximum", op, norm, cal.clip)));
      const scaled = emitBinary("mul", op, randomHadamard(clipped as never, rk as never) as unknown as Tracer, cal.scale);
      const keys = split(clientKey as never, tries + 1) as unknown as Tracer[];
      const low = emit("floor", [scaled]);
      const fraction = emitBinary("sub", op, scaled, low);
      const rounded = conditionalRounding(emit, op, cal, low, fraction, keys.slice(0, tries), d);
      const noisy = emitBinary("add", op, emit("cast", [rounded], { dtype: "int32" }), discreteGaussianNoise(emit, op, table, keys[tries]!, d));
      const wrapped = emitBinary("mod", op, noisy, 2 ** cal.bits);
      const lowBits = emitBinary("mod", op, wrapped, 2 ** LOW_BITS);
      const highBits = emit("cast", [emitBinary("div", op, emit("cast", [emitBinary("sub", op, wrapped, lowBits)], { dtype: "float32" }), 2 ** LOW_BITS)], { dtype: "int32" });
      return [lowBits, highBits];
    }) as never,
    ...([...xs.leaves, broadcast(rotationKey as never), clientKeys] as never[]),
  ) as unknown as Tracer[];

  const attrs = releaseAttrs(release, cal);
  const [sumLow, sumHigh] = parts.map((part) => emit("federated_sum", [part], attrs));
  const modulus = 2 ** cal.bits;
  // (low sum mod 2^bits) + (high sum mod 2^(bits-15)) 2^15 < 2^31: no overflow; then mod 2^bits again.
  const highModulus = 2 ** Math.max(0, cal.bits - LOW_BITS);
  const total = emitBinary("mod", op, emitBinary("add", op, emitBinary("mod", op, sumLow!, modulus), emitBinary("mul", op, emitBinary("mod", op, sumHigh!, highModulus), 2 ** LOW_BITS)), modulus);
  const centered = emit("where", [emitBinary("greater_equal", op, total, modulus / 2), emitBinary("sub", op, total, modulus), total]);
  const unscaled = emitBinary("div", op, emit("cast", [centered], { dtype: "float32" }), cal.scale);
  const restored = inverseRandomHadamard(unscaled as never, rotationKey as never) as unknown as Tracer;
  let at = 0;
  const leaves = xs.leaves.map((leaf, i) => {
    const piece = emit("slice", [restored], { begin: [at], size: [sizes[i]!] });
    at += sizes[i]!;
    return emit("reshape", [piece], { shape: [...leaf.shape] });
  });
  return unflatten(xs.def, leaves) as never;
}

/**
 * The first of the roundings whose squared norm is at most B^2 (1 - 2^-14), else zeros. The
 * margin covers float32: each square is within 2^-24 of itself, each partial sum of at most
 * 64 nonnegative terms within 63 2^-24 of its terms' sum, at most 4 levels for d <= 2^24
 * (253 2^-24 < 2^-16 in all), and the threshold's own rounding: so an accepted integer vector's
 * true norm is at most B, the sensitivity the accounting uses.
 */
function conditionalRounding(emit: Emit, op: string, cal: DistributedDpCalibration, low: Tracer, fraction: Tracer, keys: readonly Tracer[], d: number): Tracer {
  const threshold = Math.fround(cal.l2Bound * cal.l2Bound * (1 - 2 ** -14));
  let chosen: Tracer = emit("broadcast_like", [emit("constant", [], { value: 0, dtype: "float32", shape: [] }), low]);
  for (let t = keys.length - 1; t >= 0; t--) {
    const up = emit("cast", [emitBinary("less", op, uniform(keys[t] as never, [d]) as unknown as Tracer, fraction)], { dtype: "float32" });
    const candidate = emitBinary("add", op, low, up);
    const accepted = emitBinary("less_equal", op, blockedSquares(emit, op, candidate, d).sum, threshold);
    chosen = emit("where", [accepted, candidate, chosen]);
  }
  return chosen;
}

function keyOption(op: string, option: string, value: unknown, placed: (t: Tracer) => boolean): Tracer {
  const want = keyWants[option as keyof typeof keyWants];
  if (!isTracer(value)) throw ftError("FT110", { op, option, want, got: describeValue(value) });
  if (!placed(value) || value.dtype !== "int32" || value.shape.length !== 1 || value.shape[0] !== 2) throw ftError("FT110", { op, option, want, got: printType(value.type) });
  return value;
}

/** What the sums record for program.privacy (src/ir/print-privacy.ts). */
function releaseAttrs(release: number, cal: DistributedDpCalibration): Attrs {
  return {
    aggregator: "distributedDpSum",
    release,
    clip: cal.clip,
    noiseMultiplier: cal.noiseMultiplier,
    effectiveNoiseMultiplier: cal.effectiveNoiseMultiplier,
    bits: cal.bits,
    minClients: cal.minClients,
    maxClients: cal.maxClients,
    tauD: sumOfDiscreteGaussiansTau(cal.localSigma, cal.maxClients) * cal.dimension,
    // The rest of the calibration, so that the accountant can price the release from the IR (programEpsilon).
    dimension: cal.dimension,
    beta: cal.beta,
    kStddevs: cal.kStddevs,
  };
}
