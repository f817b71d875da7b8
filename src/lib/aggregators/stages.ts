/**
 * The stages of an aggregator chain (issue 21; TFF's nested aggregation factories, Flower's
 * strategy wrappers): values that say what happens to the clients' updates on their way to
 * the SERVER, and the rules for putting them together.
 *
 * A chain is read from the clients to the server: first the client stages, which each client
 * applies to its own update (a simulated attack, quantization, zeroing, clipping), then the
 * server stages, which combine the updates (a mean, a robust aggregator, DP's noise, a secure
 * sum). `aggregator(clip(1), dp(), secure({...}))` is DP-FedAvg whose clipped updates the
 * server sees only as a masked sum, with the noise added to that sum.
 *
 * The chain releases private client data (docs/language.md "Privacy") only when it contains a
 * releasing stage, dp, secure or distributed-dp: the type Releases<S> says it, and the programs
 * that use it declare their client data private only then. Compositions that cannot work are
 * refused, in the types where the stages are literal (FT114) and when the chain is built
 * (FT326), with the reason.
 */
import type { Message } from "../../../types/errors.js";
import type { DistributedDpSumOptions } from "../../front/distributed-dp.js";
import { ftError } from "../../errors/error.js";

/** The attacks a simulated malicious client makes (robustness experiments; never in a real deployment). */
export const attacks = ["sign-flip", "scale", "noise"] as const;
export type Attack = (typeof attacks)[number];

/** Each malicious client (a CLIENTS input `malicious` of 1s and 0s) sends this instead of its update. */
export interface AttackStage {
  readonly kind: "attack";
  readonly attack: Attack;
}
/** Unbiased stochastic quantization to `bits` per coordinate, after a shared random Hadamard rotation when `rotation`. */
export interface QuantizeStage {
  readonly kind: "quantize";
  readonly bits: number;
  readonly rotation: boolean;
}
/** A client's update zeroed when its global L2 norm exceeds `bound` (TFF's zeroing). */
export interface ZeroingStage {
  readonly kind: "zeroing";
  readonly bound: number;
}
/**
 * A client's update scaled to global L2 norm at most `bound` (Sun et al. 2019's norm bounding;
 * DP's clipping when a dp stage follows, where "adaptive" tracks a private quantile of the norms).
 */
export interface ClipStage {
  readonly kind: "clip";
  readonly bound: number | "adaptive";
}
/** The Gaussian mechanism: N(0, (z C)^2) added at the SERVER to the sum of updates clipped to C, divided by the expected cohort. */
export interface DpStage {
  readonly kind: "dp";
}
/** Secure aggregation (SecAgg, SecAgg+): the server learns the sum of the masked updates only. */
export interface SecureStage {
  readonly kind: "secure";
  /** The modulus 2^bits of the sums, bits <= 30. */
  readonly bits: number;
  /** Each coordinate of a client's update is clipped to [-clip, clip], the sum's declared range. */
  readonly clip: number;
  /** The largest weight (example count) of a client. */
  readonly maxWeight: number;
  /** The most clients a round sums: fixes the quantization scale. */
  readonly maxClients: number;
  /** Neighbours per client in the mask graph (SecAgg+); every other client when absent. */
  readonly neighbours?: number;
  /** The fewest clients of a secure group (secureSum's minClients; a streamed chunk is one group). */
  readonly minClients?: number;
}
/** distributedDpSum's options (src/front/distributed-dp.ts) that a distributed-dp stage fixes. */
export type DistributedDpOptions = Pick<DistributedDpSumOptions<unknown, unknown>, "clip" | "noiseMultiplier" | "bits" | "minClients" | "maxClients">;
/**
 * Distributed DP (Kairouz, Liu and Steinke 2021; TFF's DistributedDpSumFactory inside a mean):
 * each client clips its whole update, rotates, rounds and noises it (distributedDpSum), and the
 * server learns only the sum mod 2^bits, which it divides by the number of clients that took
 * part. It is the chain's only server stage.
 */
export interface DistributedDpStage extends DistributedDpOptions {
  readonly kind: "distributed-dp";
}
/** The weighted mean (FedAvg's): the default server stage. */
export interface MeanStage {
  readonly kind: "mean";
}
/** The coordinate-wise median (Yin et al. 2018). */
export interface MedianStage {
  readonly kind: "median";
}
/** The coordinate-wise trimmed mean, `trim` of the clients dropped from each end (Yin et al. 2018). */
export interface TrimmedMeanStage {
  readonly kind: "trimmed-mean";
  readonly trim: number;
}
/** (Multi-)Krum (Blanchard et al. 2017): the mean of the `select` clients of lowest score, f = `byzantine`. */
export interface KrumStage {
  readonly kind: "krum";
  readonly byzantine: number;
  readonly select: number;
}

export type ClientStage = AttackStage | QuantizeStage | ZeroingStage | ClipStage;
export type ServerStage = DpStage | SecureStage | DistributedDpStage | MeanStage | MedianStage | TrimmedMeanStage | KrumStage;
/**
 * One stage of an aggregator's chain: a client stage (clip, quantize, zeroing, an attack) or a
 * server stage (dp, secure, distributed-dp, mean, median, trimmed-mean, krum).
 *
 * @example
 * const stages: Stage[] = [aggregationStages.clip(1), aggregationStages.dp(), aggregationStages.mean()];
 * chainProblem(stages); // undefined: the chain works
 */
export type Stage = ClientStage | ServerStage;
/**
 * A stage's name, as `--aggregator` lists it: one of stageKinds.
 *
 * @example
 * const kind: StageKind = "median";
 * stageKinds.includes(kind); // true
 */
export type StageKind = Stage["kind"];

/**
 * Every stage by name, client stages first, in the order a chain lists them.
 *
 * @example
 * import { stageKinds } from "fedtensor/lib";
 * console.log(stageKinds.join(", ")); // attack, quantize, zeroing, clip, dp, secure, distributed-dp, mean, median, trimmed-mean, krum
 */
export const stageKinds = ["attack", "quantize", "zeroing", "clip", "dp", "secure", "distributed-dp", "mean", "median", "trimmed-mean", "krum"] as const satisfies readonly StageKind[];
const clientKinds: ReadonlySet<string> = new Set(["attack", "quantize", "zeroing", "clip"]);
/** The server stages that compare clients with each other: no MapReduce form, and each client's value is needed. */
export const robustKinds: ReadonlySet<string> = new Set(["median", "trimmed-mean", "krum"]);
/** The stages that may take private client data to the SERVER. */
export const releasingKinds: ReadonlySet<string> = new Set(["dp", "secure", "distributed-dp"]);
/** The releasing stages that add noise: a round is one accounted mechanism. */
export const noisingKinds: ReadonlySet<string> = new Set(["dp", "distributed-dp"]);

export const isClientStage = (stage: Stage): stage is ClientStage => clientKinds.has(stage.kind);

/** The clip stage of a chain with dp: its bound is the server state `clip`. */
export const dpClip = (stages: readonly Stage[]): ClipStage | undefined =>
  stages.some((s) => s.kind === "dp") ? (stages.find((s) => s.kind === "clip") as ClipStage | undefined) : undefined;

/** Whether a chain with dp clips adaptively (Andrew et al. 2021). */
export const isAdaptive = (stages: readonly Stage[]): boolean => dpClip(stages)?.bound === "adaptive";

/** The stage constructors, one value: `aggregator(aggregationStages.clip(1), aggregationStages.dp())`. */
export const aggregationStages = {
  attack: (kind: Attack): AttackStage => ({ kind: "attack", attack: kind }),
  quantize: (bits: number, options: { readonly rotation?: boolean } = {}): QuantizeStage => ({ kind: "quantize", bits, rotation: options.rotation ?? false }),
  zeroing: (bound: number): ZeroingStage => ({ kind: "zeroing", bound }),
  clip: <const B extends number | "adaptive">(bound: B): ClipStage & { readonly bound: B } => ({ kind: "clip", bound }),
  dp: (): DpStage => ({ kind: "dp" }),
  secure: (options: Omit<SecureStage, "kind">): SecureStage => ({ kind: "secure", ...options }),
  distributedDp: (options: DistributedDpOptions): DistributedDpStage => ({ kind: "distributed-dp", ...options }),
  mean: (): MeanStage => ({ kind: "mean" }),
  median: (): MedianStage => ({ kind: "median" }),
  trimmedMean: (trim = 0.1): TrimmedMeanStage => ({ kind: "trimmed-mean", trim }),
  krum: (options: { readonly byzantine?: number; readonly select?: number } = {}): KrumStage => ({ kind: "krum", byzantine: options.byzantine ?? 1, select: options.select ?? 1 }),
} as const;

/**
 * Whether a chain of these stages releases private client data: it holds dp, secure or distributed-dp.
 *
 * @example
 * import { aggregationStages as s, type Releases } from "fedtensor/lib";
 * const dp = [s.clip(1), s.dp()] as const;
 * const robust = [s.clip(1), s.median()] as const;
 * const yes: Releases<typeof dp> = true;
 * const no: Releases<typeof robust> = false;
 */
export type Releases<S extends readonly Stage[]> = Extract<S[number]["kind"], "dp" | "secure" | "distributed-dp"> extends never ? false : true;

type Kinds<S extends readonly Stage[]> = { [I in keyof S]: S[I] extends Stage ? S[I]["kind"] : never };
type Chain<K extends readonly string[]> = K extends readonly [infer H extends string, ...infer R extends string[]] ? (R extends [] ? H : `${H},${Chain<R>}`) : "";
type Before<K extends readonly string[], A extends string, B extends string> = K extends readonly [infer H, ...infer R extends string[]]
  ? H extends B
    ? false
    : H extends A
      ? true
      : Before<R, A, B>
  : false;
type Count<K extends readonly string[], A extends string, N extends unknown[] = []> = K extends readonly [infer H, ...infer R extends string[]]
  ? Count<R, A, H extends A ? [...N, 0] : N>
  : N["length"];
type ChainWhy<K extends readonly string[]> = "distributed-dp" extends K[number] ? DistributedDpWhy<K> : SummedWhy<K>;
type SummedWhy<K extends readonly string[]> = Extract<K[number], "median" | "trimmed-mean" | "krum"> extends infer Robust extends string
  ? [Robust] extends [never]
    ? DpWhy<K>
    : "secure" extends K[number]
      ? `${Robust} needs each client's value, and secure aggregation shows the server only the sum of masked values`
      : "dp" extends K[number]
        ? `dp's noise is calibrated to a sum of clipped updates, not to a ${Robust}`
        : DpWhy<K>
  : never;
type DpWhy<K extends readonly string[]> = "dp" extends K[number]
  ? Count<K, "dp"> extends 1
    ? Before<K, "clip", "dp"> extends true
      ? never
      : "clip" extends K[number]
        ? "noise before clipping: the clip bounds each client's contribution, so the noise calibrated to it must come after"
        : "dp needs a clip stage before it: its noise is calibrated to the clip norm"
    : "two releasing noise stages: a round is one Gaussian mechanism, so the chain has one dp stage"
  : never;
type DistributedDpWhy<K extends readonly string[]> = Exclude<K[number], "distributed-dp" | ClientStage["kind"]> extends infer Other extends string
  ? [Other] extends [never]
    ? Extract<K[number], "clip" | "quantize"> extends infer Own extends string
      ? Own extends "clip"
        ? typeof distributedDpClips
        : typeof distributedDpRounds
      : never
    : Other extends "dp" | "secure"
      ? `distributed-dp is itself the secure sum and its noise, so no ${Other} stage goes with it`
      : Other extends "mean"
        ? typeof distributedDpMeans
        : `${Other} needs each client's value, and distributed-dp shows the server only the noised sum`
  : never;
const distributedDpClips = "distributed-dp clips each client's whole update to its own bound (--ddp-clip), so no clip stage goes before it";
const distributedDpRounds = "distributed-dp rotates and rounds each update itself, to its modulus 2^bits, so no quantize stage goes before it";
const distributedDpMeans = "distributed-dp divides its sum by the number of clients that took part, so no mean stage goes with it";

/**
 * FT114 where a chain of literal stages cannot work, with the reason; never when it can (or the kinds are not known statically).
 *
 * @example
 * import { aggregationStages as s, type ChainCheck } from "fedtensor/lib";
 * const stages = [s.clip(1), s.dp()] as const;
 * type Works = ChainCheck<typeof stages>; // never; a chain that cannot work gives its FT114 message
 */
export type ChainCheck<S extends readonly Stage[]> = string extends S[number]["kind"]
  ? never
  : [ChainWhy<Kinds<S>>] extends [never]
    ? never
    : Message<"FT114", { chain: Chain<Kinds<S>>; why: ChainWhy<Kinds<S>> }>;

/** The chain as `fedtensor run --aggregator` writes it: its stage names joined by commas. */
export const chainName = (stages: readonly Stage[]): string => stages.map((s) => s.kind).join(",");

const positive = (n: unknown): boolean => typeof n === "number" && Number.isFinite(n) && n > 0;
const whole = (n: unknown, least: number): boolean => Number.isSafeInteger(n) && (n as number) >= least;

/** What is wrong with one stage's options, or undefined. */
function stageProblem(stage: Stage): string | undefined {
  switch (stage.kind) {
    case "attack":
      return (attacks as readonly string[]).includes(stage.attack) ? undefined : `attack must be one of ${attacks.join(", ")}, got ${String(stage.attack)}`;
    case "quantize":
      return whole(stage.bits, 1) && stage.bits <= 16 ? undefined : `quantize's bits per coordinate must be a whole number from 1 to 16, got ${String(stage.bits)}`;
    case "zeroing":
      return positive(stage.bound) ? undefined : `zeroing's bound must be a norm > 0, got ${String(stage.bound)}`;
    case "clip":
      return stage.bound === "adaptive" || positive(stage.bound) ? undefined : `clip's bound must be a norm > 0 or "adaptive", got ${String(stage.bound)}`;
    case "secure":
      if (!(whole(stage.bits, 1) && stage.bits <= 30)) return `secure's bits must be a whole number from 1 to 30, got ${String(stage.bits)}`;
      if (!positive(stage.clip)) return `secure's clip must be > 0, got ${String(stage.clip)}`;
      if (!whole(stage.maxWeight, 1) || !whole(stage.maxClients, 1)) return `secure's maxWeight and maxClients must be whole numbers >= 1, got ${String(stage.maxWeight)} and ${String(stage.maxClients)}`;
      return stage.neighbours === undefined || (whole(stage.neighbours, 2) && stage.neighbours % 2 === 0) ? undefined : `secure's neighbours must be an even number >= 2, got ${String(stage.neighbours)}`;
    case "distributed-dp":
      if (!positive(stage.clip) || !positive(stage.noiseMultiplier)) return `distributed-dp's clip and noiseMultiplier must be > 0, got ${String(stage.clip)} and ${String(stage.noiseMultiplier)}`;
      if (!(whole(stage.bits, 2) && stage.bits <= 30)) return `distributed-dp's bits must be a whole number from 2 to 30, got ${String(stage.bits)}`;
      return whole(stage.minClients, 1) && whole(stage.maxClients, stage.minClients) && stage.maxClients <= 65535
        ? undefined
        : `distributed-dp's minClients and maxClients must be whole numbers, 1 <= minClients <= maxClients <= 65535, got ${String(stage.minClients)} and ${String(stage.maxClients)}`;
    case "trimmed-mean":
      return typeof stage.trim === "number" && stage.trim >= 0 && stage.trim < 0.5 ? undefined : `trimmed-mean's trim must be in [0, 0.5), got ${String(stage.trim)}`;
    case "krum":
      return whole(stage.byzantine, 0) && whole(stage.select, 1) ? undefined : `krum's byzantine must be a whole number >= 0 and select >= 1, got ${String(stage.byzantine)} and ${String(stage.select)}`;
    default:
      return (stageKinds as readonly string[]).includes((stage as Stage).kind) ? undefined : `no stage '${String((stage as { kind?: unknown }).kind)}': the stages are ${stageKinds.join(", ")}`;
  }
}

/**
 * Why a chain of stages cannot work, or undefined when it can: the rules FT326 enforces.
 *
 * @example
 * import { aggregationStages as s, chainProblem } from "fedtensor/lib";
 * console.log(chainProblem([s.clip(1), s.dp()])); // undefined: the chain works
 * console.log(chainProblem([s.dp(), s.clip(1)])); // why not: the reason FT326 would give
 */
export function chainProblem(stages: readonly Stage[]): string | undefined {
  if (stages.length === 0) return "an aggregator needs at least one stage (mean, for FedAvg's)";
  for (const stage of stages) {
    if (typeof stage !== "object" || stage === null) return `a stage is a value such as clip(1) or dp(), got ${String(stage)}`;
    const problem = stageProblem(stage);
    if (problem !== undefined) return problem;
  }
  const kinds = stages.map((s) => s.kind);
  const distributed = kinds.includes("distributed-dp") ? distributedDpProblem(kinds) : undefined;
  if (distributed !== undefined) return distributed;
  const count = (kind: string) => kinds.filter((k) => k === kind).length;
  const repeated = stageKinds.find((k) => k !== "dp" && count(k) > 1);
  if (count("dp") > 1) return "two releasing noise stages: a round is one Gaussian mechanism, so the chain has one dp stage";
  if (repeated !== undefined) return `${repeated} appears twice: each stage acts once on an update`;
  const dpAt = kinds.indexOf("dp");
  const clipAt = kinds.indexOf("clip");
  if (dpAt >= 0 && clipAt > dpAt) return "noise before clipping: the clip bounds each client's contribution, so the noise calibrated to it must come after";
  const firstServer = stages.findIndex((s) => !isClientStage(s));
  const lateClient = stages.findIndex((s, i) => firstServer >= 0 && i > firstServer && isClientStage(s));
  if (lateClient >= 0) return `${kinds[lateClient]} runs at each client, so it comes before the server's ${kinds[firstServer]}`;
  if (kinds.indexOf("attack") > 0) return "attack stands for what a malicious client sends instead of its update, so it comes first";
  const robust = kinds.filter((k) => robustKinds.has(k));
  if (robust.length > 1) return `${robust.join(" and ")} are two ways to combine the updates: give one`;
  if (robust.length === 1 && kinds.includes("secure")) return `${robust[0]} needs each client's value, and secure aggregation shows the server only the sum of masked values`;
  if (robust.length === 1 && kinds.includes("dp")) return `dp's noise is calibrated to a sum of clipped updates, not to a ${robust[0]}`;
  if (dpAt >= 0) {
    if (clipAt < 0) return "dp needs a clip stage before it: its noise is calibrated to the clip norm";
    const between = kinds.slice(clipAt + 1).find((k) => clientKinds.has(k));
    if (between !== undefined) return `${between} after clip changes the clipped norm dp's noise is calibrated to: put it before clip`;
    const secureAt = kinds.indexOf("secure");
    if (secureAt >= 0 && secureAt < dpAt) return "dp's noise is added to the secure sum, so dp comes before secure: clip,dp,secure";
  }
  if (dpAt < 0 && stages.some((s) => s.kind === "clip" && s.bound === "adaptive")) {
    return "adaptive clipping estimates its quantile with dp's noise on the clipped count: give a fixed bound without dp";
  }
  return undefined;
}

/** Why a chain with distributed-dp cannot work: it is the chain's only server stage, and it clips, rotates and rounds each update itself. */
function distributedDpProblem(kinds: readonly StageKind[]): string | undefined {
  const other = kinds.find((k) => k !== "distributed-dp" && !clientKinds.has(k));
  if (other === "dp" || other === "secure") return `distributed-dp is itself the secure sum and its noise, so no ${other} stage goes with it`;
  if (other === "mean") return distributedDpMeans;
  if (other !== undefined) return `${other} needs each client's value, and distributed-dp shows the server only the noised sum`;
  if (kinds.includes("clip")) return distributedDpClips;
  return kinds.includes("quantize") ? distributedDpRounds : undefined;
}

/** FT326 unless the stages make a chain that can work. */
export function checkChain(stages: readonly Stage[]): void {
  const why = chainProblem(stages);
  if (why !== undefined) throw ftError("FT326", { chain: Array.isArray(stages) ? stages.map((s) => String((s as Stage | undefined)?.kind)).join(",") : String(stages), why });
}
