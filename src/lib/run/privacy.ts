/**
 * The privacy side of `fedtensor run` with a dp stage in --aggregator (clip,dp; clip,dp,secure;
 * with any algorithm that takes it): the dp stage's inputs that follow from the options, and
 * the epsilon spent after each round. Every algorithm releases one Gaussian mechanism a round
 * through its chain (MimeLite's delta and gradient as one clipped tree; Mime is refused), so
 * the same accountant applies.
 *
 * Accounting matches what runs: every client joins a round independently with probability
 * q = clientsPerRound / clients (Poisson sampling from the run's secret, src/lib/privacy/secret.ts),
 * the sum is divided by the expected cohort, and the accountant is the Poisson-sampled
 * Gaussian's PLD (by default; RDP with --accountant rdp) with add/remove neighbours
 * (src/lib/privacy/dp-fedavg-epsilon.ts), plus the noise sampler's share of delta. A round skipped for too few survivors is still counted
 * (conservative); DP runs skip none (run-options.ts). With adaptive clipping z is the whole
 * round's multiplier: Andrew et al.'s Theorem 1 split gives the update z_delta and the clipped
 * count sigma_b = m / 20 (TFF's default), so the same accountant applies unchanged.
 */
import { chainHas } from "./aggregator-chain.js";
import { normalSamplerDeltaPerDraw } from "../../ir/normal.js";
import { dpFedAvgEpsilon, dpFedAvgPldEpsilon, dpNoiseSplit, type ComposedGaussian } from "../privacy/dp-fedavg-epsilon.js";
import { PldAccountant } from "../privacy/pld/accountant.js";
import { accuracyBins } from "../algorithms/private-evaluation.js";
import { evaluationReleaseCounts } from "./evaluation-releases.js";

/** Each normal draw's total variation from the exact normal (the sampler's bound, src/ir/normal.ts). */
export const samplerDeltaPerDraw = normalSamplerDeltaPerDraw;

/**
 * The run options these functions read: a RunConfig is one (declared here, not imported, as
 * config.ts checks its options with these functions).
 */
export interface PrivacyOptions {
  readonly aggregator: string;
  /** The algorithm: MimeLite's noise covers its gradient tree as well as its delta. */
  readonly algorithm?: string;
  readonly clients: number;
  readonly clientsPerRound: number;
  readonly dropout: number;
  readonly dpClip?: number | "adaptive";
  readonly dpNoise?: number;
  readonly dpDelta?: number;
  readonly dpTargetEpsilon?: number;
  readonly dpInsecureSeed?: number;
  /** The accountant: PLD (the default) or RDP (the cross-check). */
  readonly accountant?: AccountantName;
  /** Federated and personalization evaluation, which a private run releases as DP histograms (src/lib/algorithms/private-evaluation.ts). */
  readonly clientHoldout?: number;
  readonly rounds?: number;
  readonly evalEvery?: number;
  readonly personalizeEpochs?: number;
  readonly evalNoise?: number;
}

/** --accountant: the PLD accountant (src/lib/privacy/pld) or the RDP one (src/lib/privacy/rdp.ts). */
export const accountantNames = ["pld", "rdp"] as const;
export type AccountantName = (typeof accountantNames)[number];

/**
 * The accountant a private run's epsilon comes from, as its metrics rows name it: --accountant
 * (PLD by default) for the dp stage and for distributed DP (src/lib/privacy/distributed-dp-pld.ts).
 */
export function accountantOf(config: Pick<PrivacyOptions, "aggregator" | "accountant">): AccountantName | undefined {
  return isDpRun(config) || chainHas(config.aggregator, "distributed-dp") ? (config.accountant ?? "pld") : undefined;
}

/** Whether the run's chain has a dp stage: it is accounted, and its cohorts are Poisson samples from the run's secret. */
export const isDpRun = (config: Pick<PrivacyOptions, "aggregator">): boolean => chainHas(config.aggregator, "dp");

/** q: each client's probability of joining a DP round. */
export const samplingRateOf = (config: PrivacyOptions): number => Math.min(1, config.clientsPerRound / config.clients);

/** What every progress line, metrics row and plot title of a --dp-insecure-seed run says; undefined for a private run. */
export const notPrivateLabel = (config: PrivacyOptions): string | undefined =>
  isDpRun(config) && (config.dpInsecureSeed ?? 0) > 0 ? "not private (--dp-insecure-seed)" : undefined;

/** The denominator of DP-FedAvg's estimator: the clients expected to report in a round. */
export const expectedClientsOf = (config: PrivacyOptions): number => config.clientsPerRound * (1 - config.dropout);

/** Andrew et al.'s clipped-count noise: sigma_b = m / 20, as TFF's gaussian_adaptive. */
export const countStddevOf = (config: PrivacyOptions): number => expectedClientsOf(config) / 20;

/** The update's noise multiplier: --dp-noise, less the clipped count's share when the clip is adaptive. */
export function updateNoiseMultiplier(config: PrivacyOptions): number | undefined {
  const z = config.dpNoise ?? 0;
  return config.dpClip === "adaptive" ? dpNoiseSplit(z, countStddevOf(config)) : z;
}

/** The length of the vector a private round releases: the model's parameters, twice them for MimeLite (its delta and gradient in one tree). */
export const releasedLength = (config: Pick<PrivacyOptions, "algorithm">, parameters: number): number => parameters * (config.algorithm === "mimelite" ? 2 : 1);

/** Normal draws a DP round makes: one per released coordinate, one more for adaptive clipping's count. */
export const noiseDrawsPerRound = (config: PrivacyOptions, parameters: number): number => releasedLength(config, parameters) + (config.dpClip === "adaptive" ? 1 : 0);

/** The epsilon at --dp-delta after `rounds` rounds of a model of `parameters` parameters, by --accountant; Infinity without noise. */
export function epsilonAfter(config: PrivacyOptions, rounds: number, parameters: number, final = false): number {
  const mechanism = { samplingRate: samplingRateOf(config), noiseMultiplier: config.dpNoise ?? 0, noiseDrawsPerRound: noiseDrawsPerRound(config, parameters), samplerDeltaPerDraw };
  const delta = config.dpDelta ?? 1e-5;
  const evaluations = evaluationReleases(config, rounds, final);
  // Personalization's release draws two histograms' noise: every release is counted at that.
  const composed = { noiseMultiplier: config.evalNoise ?? 1, releases: evaluations, drawsPerRelease: 2 * accuracyBins };
  if (config.accountant === "rdp") return dpFedAvgEpsilon(mechanism, rounds, delta, evaluations > 0 ? composed : undefined).epsilon;
  return evaluations > 0 ? withEvaluations(mechanism, rounds, composed, delta) : dpFedAvgPldEpsilon(mechanism, rounds, delta);
}

/**
 * The DP evaluation releases of a dp run with --client-holdout by the end of round `rounds`
 * (evaluation-releases.ts; personalization's counted as one). Each is a Gaussian mechanism of
 * multiplier --eval-noise over every evaluated client (no amplification by sampling is claimed).
 */
export function evaluationReleases(config: PrivacyOptions, rounds: number, final: boolean): number {
  if (!isDpRun(config)) return 0;
  const { evaluations, personalizations } = evaluationReleaseCounts(config, rounds, final);
  return evaluations + personalizations;
}

/** The rounds' PLD composed with the evaluations' (the RDP accountant composes them in dpFedAvgEpsilon); memoised. */
function withEvaluations(mechanism: { samplingRate: number; noiseMultiplier: number; noiseDrawsPerRound: number }, rounds: number, evaluations: ComposedGaussian, delta: number): number {
  const { samplingRate: q, noiseMultiplier: z, noiseDrawsPerRound: draws } = mechanism;
  const { noiseMultiplier: evalNoise, releases, drawsPerRelease } = evaluations;
  if (z === 0) return Infinity;
  const key = `${q}:${z}:${draws}:${rounds}:${releases}:${evalNoise}:${delta}`;
  let epsilon = evaluatedEpsilons.get(key);
  if (epsilon === undefined) {
    const accountant = new PldAccountant().step(q, z, rounds, draws * samplerDeltaPerDraw).step(1, evalNoise, releases, drawsPerRelease * samplerDeltaPerDraw);
    epsilon = accountant.epsilon(delta);
    if (evaluatedEpsilons.size >= 1024) evaluatedEpsilons.delete(evaluatedEpsilons.keys().next().value!);
    evaluatedEpsilons.set(key, epsilon);
  }
  return epsilon;
}
const evaluatedEpsilons = new Map<string, number>();

/** The plot's privacy panel of a DP run. */
export const privacyPlotMetrics = [{ key: "epsilon", title: "Privacy spent (epsilon)" }] as const;

/**
 * A DP round's metrics columns: epsilon after it (null without noise: no finite epsilon) and
 * the clip norm it used (adaptive clipping moves it).
 */
export function privacyColumns(config: PrivacyOptions, round: number, clip: number | undefined, parameters: number): { epsilon: number | null; dp_clip: number | null } {
  const epsilon = epsilonAfter(config, round, parameters);
  return { epsilon: Number.isFinite(epsilon) ? epsilon : null, dp_clip: clip ?? null };
}

/**
 * Whether round `round` would spend more than --dp-target-epsilon, with the message that says
 * so; never for runs without a target.
 */
export function privacyBudget(config: PrivacyOptions, round: number, parameters: number): { exceeded: false } | { exceeded: true; message: string } {
  const target = config.dpTargetEpsilon ?? 0;
  if (!isDpRun(config) || target === 0) return { exceeded: false };
  const next = epsilonAfter(config, round, parameters, true);
  if (next <= target) return { exceeded: false };
  const spent = round > 1 ? `${round - 1} rounds spent epsilon ${epsilonAfter(config, round - 1, parameters, true).toFixed(3)}` : "no round fits";
  return {
    exceeded: true,
    message: `privacy budget reached: round ${round} would bring epsilon to ${next.toFixed(3)} > --dp-target-epsilon ${target} (delta ${config.dpDelta}); stopping: ${spent}`,
  };
}
