/**
 * The privacy side of `fedtensor run --aggregator dp`: the DP-FedAvg round's inputs that
 * follow from the options, and the epsilon spent after each round.
 *
 * Accounting, as TFF's and Opacus's DP-FedAvg tutorials do it: the sampled Gaussian mechanism
 * (src/lib/privacy/rdp.ts) with sampling rate q = clientsPerRound / clients and noise
 * multiplier z = --dp-noise, composed over the rounds. Two simplifications, as theirs: the
 * cohort is drawn as a fixed-size sample, not Poisson sampling, and a round skipped for too
 * few survivors is still counted (conservative). With adaptive clipping z is the whole
 * round's multiplier: Andrew et al.'s Theorem 1 split gives the update z_delta and the clipped
 * count sigma_b = m / 20 (TFF's default), so the same accountant applies unchanged.
 */
import { dpNoiseSplit } from "../algorithms/dp-fedavg.js";
import { sampledGaussianEpsilon } from "../privacy/rdp.js";

/**
 * The run options these functions read: a RunConfig is one (declared here, not imported, as
 * config.ts checks its options with these functions).
 */
export interface PrivacyOptions {
  readonly aggregator: string;
  readonly clients: number;
  readonly clientsPerRound: number;
  readonly dropout: number;
  readonly dpClip?: number | "adaptive";
  readonly dpNoise?: number;
  readonly dpDelta?: number;
  readonly dpTargetEpsilon?: number;
}

/** The denominator of DP-FedAvg's estimator: the clients expected to report in a round. */
export const expectedClientsOf = (config: PrivacyOptions): number => config.clientsPerRound * (1 - config.dropout);

/** Andrew et al.'s clipped-count noise: sigma_b = m / 20, as TFF's gaussian_adaptive. */
export const countStddevOf = (config: PrivacyOptions): number => expectedClientsOf(config) / 20;

/** The update's noise multiplier: --dp-noise, less the clipped count's share when the clip is adaptive. */
export function updateNoiseMultiplier(config: PrivacyOptions): number | undefined {
  const z = config.dpNoise ?? 0;
  return config.dpClip === "adaptive" ? dpNoiseSplit(z, countStddevOf(config)) : z;
}

/** The epsilon at --dp-delta after `rounds` rounds; Infinity without noise. */
export function epsilonAfter(config: PrivacyOptions, rounds: number): number {
  const mechanism = { samplingRate: Math.min(1, config.clientsPerRound / config.clients), noiseMultiplier: config.dpNoise ?? 0, steps: rounds };
  return sampledGaussianEpsilon(mechanism, config.dpDelta ?? 1e-5).epsilon;
}

/** The plot's privacy panel of a DP run. */
export const privacyPlotMetrics = [{ key: "epsilon", title: "Privacy spent (epsilon)" }] as const;

/**
 * A DP round's metrics columns: epsilon after it (null without noise: no finite epsilon) and
 * the clip norm it used (adaptive clipping moves it).
 */
export function privacyColumns(config: PrivacyOptions, round: number, clip: number | undefined): { epsilon: number | null; dp_clip: number | null } {
  const epsilon = epsilonAfter(config, round);
  return { epsilon: Number.isFinite(epsilon) ? epsilon : null, dp_clip: clip ?? null };
}

/**
 * Whether round `round` would spend more than --dp-target-epsilon, with the message that says
 * so; never for runs without a target.
 */
export function privacyBudget(config: PrivacyOptions, round: number): { exceeded: false } | { exceeded: true; message: string } {
  const target = config.dpTargetEpsilon ?? 0;
  if (config.aggregator !== "dp" || target === 0) return { exceeded: false };
  const next = epsilonAfter(config, round);
  if (next <= target) return { exceeded: false };
  const spent = round > 1 ? `${round - 1} rounds spent epsilon ${epsilonAfter(config, round - 1).toFixed(3)}` : "no round fits";
  return {
    exceeded: true,
    message: `privacy budget reached: round ${round} would bring epsilon to ${next.toFixed(3)} > --dp-target-epsilon ${target} (delta ${config.dpDelta}); stopping: ${spent}`,
  };
}
