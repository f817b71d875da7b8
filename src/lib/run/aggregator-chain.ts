/**
 * `fedtensor run --aggregator` as a chain of stages (src/lib/aggregators): the flag's text
 * (`clip,dp,secure`, or one of the single names it has always taken), a config file's list of
 * stage objects, and the stages a run's options make of them.
 *
 * Each stage reads its options from the run's flags: clip --dp-clip with dp (a number or
 * adaptive) and --norm-bound without; dp --dp-noise and the other --dp-*; secure --secure-bits,
 * --secure-clip, --secure-neighbours; quantize --quantize-bits and --quantize-rotation;
 * zeroing --zeroing-bound; trimmed-mean --trim-fraction; krum --krum-byzantine, --krum-select;
 * distributed-dp the --ddp-* flags and --min-clients.
 * --attack puts the simulated attack first; --quantize-bits without a quantize stage quantizes
 * before the rest of the chain, as it always has.
 */
import { ftError } from "../../errors/error.js";
import { chainProblem, releasingKinds, stageKinds, type Stage, type StageKind } from "../aggregators/stages.js";
import { distributedDpOptionsOf, type DistributedDpRunOptions } from "./distributed-dp-run.js";
import type { Condition, OptionSpec } from "./option-specs.js";

/** The stages --aggregator names (the attack comes from --attack). */
type ChainStageKind = Exclude<StageKind, "attack">;
export const chainStageNames = stageKinds.filter((kind): kind is ChainStageKind => kind !== "attack");
/** The names --aggregator took before chains, and the chains they stand for. */
const singleNames: Readonly<Record<string, readonly ChainStageKind[]>> = { fedavg: ["mean"], dp: ["clip", "dp"], "norm-clip": ["clip"] };

/** The stage kinds of an --aggregator value, single names expanded; undefined when it is no chain of known names. */
export function chainKinds(value: unknown): ChainStageKind[] | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  // A single name keeps its old meaning (dp is clip,dp); inside a chain each name is one stage.
  const single = singleNames[value.trim()];
  if (single !== undefined) return [...single];
  const names = value.split(",").map((part) => part.trim());
  return names.every((name) => (chainStageNames as readonly string[]).includes(name)) ? (names as ChainStageKind[]) : undefined;
}

/** Whether the chain of an --aggregator value holds the stage. */
export const chainHas = (value: unknown, kind: StageKind): boolean => (chainKinds(value) as StageKind[] | undefined)?.includes(kind) ?? false;

/** Whether the chain releases private client data (holds dp, secure or distributed-dp): the run's data is then private. */
export const releasesPrivateData = (value: unknown): boolean => (chainKinds(value) ?? []).some((kind) => releasingKinds.has(kind));

/** Options that apply when the chain holds `kind` (and, with `without`, lacks that one). */
export function withStage(kind: StageKind, without?: StageKind): Condition {
  return {
    key: "aggregator",
    values: [`a chain with ${kind}${without === undefined ? "" : ` and without ${without}`}`],
    holds: (value) => chainHas(value, kind) && (without === undefined || !chainHas(value, without)),
  };
}

/** The --aggregator option: a chain of stages separated by commas. */
export const aggregatorOption: OptionSpec<string> = {
  type: "text",
  default: "fedavg",
  range: `stages separated by commas, from the clients to the server (${chainStageNames.join(", ")}); or fedavg (mean), dp (clip,dp), norm-clip (clip)`,
  description: "How the server combines the clients' updates: a chain of the stages listed below, such as clip,dp,secure, quantize,secure or distributed-dp (docs/algorithms.md \"Aggregators\")",
  accepts: (value): value is string => chainKinds(value) !== undefined,
};

/**
 * The chains docs/algorithms.md's table runs every algorithm with, generated from the stages:
 * each stage in the shortest chain that holds it (dp needs clip before it), quantize with each
 * releasing stage, and the releasing stages that go together, in stage order. Each is a valid
 * chain.
 */
export function representativeChains(): string[] {
  const chainOf = (kinds: readonly StageKind[]) => chainStageNames.filter((kind) => kinds.includes(kind) || (kind === "clip" && kinds.includes("dp"))).join(",");
  const valid = (kinds: readonly StageKind[]) => {
    const aggregator = chainOf(kinds);
    return runChainProblem({ aggregator, attack: "none", quantizeBits: chainHas(aggregator, "quantize") ? 4 : 0, clientsPerRound: 2, clients: 2, minClients: 1, rounds: 1 }) === undefined;
  };
  const releasing = chainStageNames.filter((kind) => releasingKinds.has(kind));
  const together = releasing.reduce<StageKind[]>((kinds, kind) => (valid([...kinds, kind]) ? [...kinds, kind] : kinds), []);
  const wanted: StageKind[][] = [...chainStageNames.map((kind) => [kind]), ...releasing.map((kind): StageKind[] => ["quantize", kind]), together];
  return [...new Set(wanted.filter(valid).map(chainOf))];
}

/** The run options a chain's stages read (a RunConfig is one). */
export interface ChainOptions extends DistributedDpRunOptions {
  readonly aggregator: string;
  readonly attack: string;
  readonly quantizeBits: number;
  readonly clientsPerRound: number;
  readonly clients: number;
  readonly quantizeRotation?: boolean;
  readonly dpClip?: number | "adaptive";
  readonly normBound?: number;
  readonly zeroingBound?: number;
  readonly secureBits?: number;
  readonly secureClip?: number;
  readonly secureNeighbours?: number;
  readonly secureGroupMin?: number;
  readonly trimFraction?: number;
  readonly krumByzantine?: number;
  readonly krumSelect?: number;
}

/**
 * The most clients a DP round's Poisson cohort has, for the secure sum's scale: the mean plus
 * eight standard deviations (a larger cohort, probability below 1e-15, fails with FT311), at
 * most every client.
 */
export const poissonCohortBound = (config: Pick<ChainOptions, "clientsPerRound" | "clients">): number =>
  Math.min(config.clients, Math.ceil(config.clientsPerRound + 8 * Math.sqrt(config.clientsPerRound) + 8));

const wholeCohort = "needs every client's update at once, in one process (FT322: no --engine, --chunk-clients at least the cohort)";

/**
 * Each stage --aggregator names, as `fedtensor run` knows it: its --help line, the options a
 * config file's stage object gives it (by the run option each sets: clip's bound is --dp-clip
 * with dp, --norm-bound without), and the stage the run's options make, given whether the chain
 * holds dp, the most examples a client has (secure's weights' range) and the length of the
 * vector a round releases (distributed DP's calibration).
 */
const runStageTable: Readonly<Record<ChainStageKind, { readonly help: string; readonly keys: Readonly<Record<string, string | ((dp: boolean) => string)>>; make(config: ChainOptions, dp: boolean, largestClient: number, released: number): Stage }>> = {
  quantize: {
    help: "each client quantizes its update to --quantize-bits bits (unbiased), after a shared random Hadamard rotation with --quantize-rotation",
    keys: { bits: "quantizeBits", rotation: "quantizeRotation" },
    make: (config) => ({ kind: "quantize", bits: config.quantizeBits, rotation: config.quantizeRotation ?? false }),
  },
  zeroing: { help: "a client's update whose L2 norm exceeds --zeroing-bound is zeroed", keys: { bound: "zeroingBound" }, make: (config) => ({ kind: "zeroing", bound: config.zeroingBound ?? 1 }) },
  clip: {
    help: "each client's update is scaled to L2 norm --dp-clip (with dp; or adaptive) or --norm-bound (without)",
    keys: { bound: (dp) => (dp ? "dpClip" : "normBound"), initialClip: "dpInitialClip", targetQuantile: "dpTargetQuantile", clipLr: "dpClipLr" },
    make: (config, dp) => ({ kind: "clip", bound: dp ? (config.dpClip ?? 1) : (config.normBound ?? 1) }),
  },
  dp: {
    help: "N(0, (z C)^2) added to the sum of the clipped updates, over the expected cohort; needs clip before it; epsilon reported",
    keys: { noise: "dpNoise", delta: "dpDelta", targetEpsilon: "dpTargetEpsilon" },
    make: () => ({ kind: "dp" }),
  },
  secure: {
    help: "masked sums (SecAgg+, --secure-bits, --secure-clip, --secure-neighbours; streamed in groups of --secure-group-min or more); after dp, the noise goes on the secure sum",
    keys: { bits: "secureBits", clip: "secureClip", neighbours: "secureNeighbours", groupMin: "secureGroupMin" },
    make: (config, dp, largestClient) => ({
      kind: "secure",
      bits: config.secureBits ?? 30,
      clip: config.secureClip ?? 1,
      maxWeight: Math.max(1, largestClient),
      maxClients: dp ? poissonCohortBound(config) : config.clientsPerRound,
      ...(config.secureNeighbours ? { neighbours: config.secureNeighbours } : {}),
      ...(config.secureGroupMin === undefined ? {} : { minClients: config.secureGroupMin }),
    }),
  },
  "distributed-dp": {
    help: "each client clips its whole update to --ddp-clip, rotates, rounds and noises it (--ddp-noise, or --ddp-target-epsilon); the server learns only the sum mod 2^--ddp-bits, over the clients that took part (at least --min-clients); the chain's only server stage; epsilon reported",
    keys: { clip: "ddpClip", noise: "ddpNoise", bits: "ddpBits", delta: "ddpDelta", targetEpsilon: "ddpTargetEpsilon" },
    make: (config, _dp, _largestClient, released) => ({ kind: "distributed-dp", ...distributedDpOptionsOf(config, released) }),
  },
  mean: { help: "the example-weighted mean (the default)", keys: {}, make: () => ({ kind: "mean" }) },
  median: { help: `the coordinate-wise median; ${wholeCohort}`, keys: {}, make: () => ({ kind: "median" }) },
  "trimmed-mean": { help: `the coordinate-wise mean without --trim-fraction of each end; ${wholeCohort}`, keys: { trim: "trimFraction" }, make: (config) => ({ kind: "trimmed-mean", trim: config.trimFraction ?? 0.1 }) },
  krum: {
    help: `(multi-)Krum, --krum-byzantine and --krum-select; ${wholeCohort}`,
    keys: { byzantine: "krumByzantine", select: "krumSelect" },
    make: (config) => ({ kind: "krum", byzantine: config.krumByzantine ?? 1, select: config.krumSelect ?? 1 }),
  },
};

/**
 * The run's chain of stages, with their options; `largestClient` is the most examples a client
 * has, `released` the length of the vector a round releases (the chain's rules depend on neither).
 */
export function runStages(config: ChainOptions, largestClient: number, released: number): Stage[] {
  const kinds = chainKinds(config.aggregator) ?? [];
  const make = (kind: ChainStageKind) => runStageTable[kind].make(config, kinds.includes("dp"), largestClient, released);
  const stages = kinds.map(make);
  if (config.quantizeBits > 0 && !kinds.includes("quantize")) stages.unshift(make("quantize"));
  if (config.attack !== "none") stages.unshift({ kind: "attack", attack: config.attack as never });
  return stages;
}

/** Why the run's chain cannot work, or undefined (a quantize stage without --quantize-bits included). */
export function runChainProblem(config: ChainOptions): string | undefined {
  if (chainHas(config.aggregator, "quantize") && config.quantizeBits === 0) return "the quantize stage needs --quantize-bits 1 to 16";
  return chainProblem(runStages(config, 1, 1));
}

/**
 * A config file's `aggregator` given as a list of stage objects, such as
 * `[{ "stage": "clip", "bound": 1 }, { "stage": "dp", "noise": 1.1 }, { "stage": "secure", "bits": 30 }]`,
 * as the chain's text and the run options its objects set; other values as they are.
 */
export function expandAggregatorList(given: Readonly<Record<string, unknown>>, source: string): Record<string, unknown> {
  const list = given.aggregator;
  if (!Array.isArray(list)) return { ...given };
  const bad = (why: string) => ftError("FT305", { option: source, why });
  const names = list.map((item) => (typeof item === "object" && item !== null && typeof (item as { stage?: unknown }).stage === "string" ? (item as { stage: string }).stage : undefined));
  const missing = names.findIndex((name) => name === undefined || !Object.hasOwn(runStageTable, name));
  if (list.length === 0 || missing >= 0) throw bad(`a list of stage objects such as { "stage": "clip", "bound": 1 }; stages: ${chainStageNames.join(", ")}${missing >= 0 ? ` (item ${missing + 1} is not one)` : ""}`);
  const dp = names.includes("dp");
  const out: Record<string, unknown> = { ...given, aggregator: names.join(",") };
  list.forEach((item: Record<string, unknown>, i) => {
    for (const [field, value] of Object.entries(item)) {
      if (field === "stage") continue;
      const { keys } = runStageTable[names[i] as ChainStageKind];
      const target = Object.hasOwn(keys, field) ? keys[field] : undefined;
      if (target === undefined) throw bad(`stage ${names[i]} has no option '${field}'; it takes ${Object.keys(keys).join(", ") || "none"}`);
      const key = typeof target === "function" ? target(dp) : target;
      if (key in out && out[key] !== value) throw bad(`${names[i]}'s ${field} sets ${key}, which is given as ${JSON.stringify(out[key])} too`);
      out[key] = value;
    }
  });
  return out;
}

/** The stages as `fedtensor run --help` lists them. */
export const stagesHelp = [
  "Aggregator stages (--aggregator a,b,c, from the clients to the server; a config file may give a list of { \"stage\": ..., options } objects):",
  ...chainStageNames.map((kind) => `  ${kind.padEnd(14)} ${runStageTable[kind].help}`),
].join("\n");
