/**
 * `fedtensor run --aggregator distributed-dp` (the distributed-dp stage of a chain, with any
 * algorithm that takes a releasing chain): the stage's options from the run's --ddp-* flags,
 * and the epsilon spent. The noise is calibrated for --min-clients survivors (a round with
 * fewer is skipped, as a SecAgg+ round below its threshold aborts) and the sum's modulus holds
 * --clients-per-round clients.
 *
 * Accounting (src/lib/privacy/distributed-dp-pld.ts by default, distributed-dp.ts's RDP with
 * --accountant rdp): every round is a full release of the
 * cohort's sum, with no amplification by sampling (the server of distributed DP sees who takes
 * part), for the neighbouring relation in which one participant's update is replaced by zeros.
 * `length` is the length of the vector a round releases: the model's parameters (twice them
 * for MimeLite, whose delta and gradient are one tree), or a served accumulator's.
 *
 * With --client-holdout the per-client evaluation's histograms (src/lib/run/private-eval.ts) are
 * distributed-DP releases too, of their own calibration (evaluationReleaseOptions): the epsilon
 * composes them with the rounds (distributedDpComposedPldEpsilon, or RDP order by order), and
 * --ddp-target-epsilon calibrates the rounds' noise with them counted.
 */
import { hadamardLength } from "../../front/rotation.js";
import type { DistributedDpOptions } from "../aggregators/stages.js";
import { accuracyBins } from "../algorithms/private-evaluation.js";
import { calibrateDistributedDp, distributedDpEpsilonBy, noiseMultiplierForEpsilon, type DistributedDpCalibration } from "../privacy/distributed-dp.js";
import type { DistributedDpReleases } from "../privacy/distributed-dp-pld.js";
import { secureGroupCount } from "./cohort.js";
import { evaluationReleaseCounts, type EvaluationScheduleOptions } from "./evaluation-releases.js";

/** The run options distributed DP reads (a RunConfig is one). */
export interface DistributedDpRunOptions extends EvaluationScheduleOptions {
  readonly rounds: number;
  /** The cohort, and --eval-clients of it: the most clients an evaluation's release sums. */
  readonly clients?: number;
  readonly evalClients?: number;
  /** The evaluation histograms' noise multiplier (for each group's sum, as the rounds' for --min-clients). */
  readonly evalNoise?: number;
  /** Clients per streamed chunk: the evaluation's secure groups are about this large. */
  readonly chunkClients?: number;
  readonly minClients: number;
  readonly clientsPerRound: number;
  readonly ddpClip?: number;
  readonly ddpNoise?: number;
  readonly ddpBits?: number;
  readonly ddpDelta?: number;
  readonly ddpTargetEpsilon?: number;
  /** The accountant: PLD (the default) or RDP (the cross-check). */
  readonly accountant?: "pld" | "rdp";
}

/** The mechanism's options from a run's config, for a released vector of `length` values: with --ddp-target-epsilon, the noise multiplier that spends it, with the evaluations' releases, in --rounds rounds. */
export function distributedDpOptionsOf(config: DistributedDpRunOptions, length: number): DistributedDpOptions {
  const base = { clip: config.ddpClip ?? 1, bits: config.ddpBits ?? 16, minClients: config.minClients, maxClients: config.clientsPerRound };
  const target = config.ddpTargetEpsilon ?? 0;
  const noiseMultiplier =
    target > 0
      ? noiseMultiplierForEpsilon({ ...base, dimension: hadamardLength(length) }, target, config.rounds, config.ddpDelta ?? 1e-5, config.accountant, evaluationReleasesOf(config, config.rounds, true))
      : (config.ddpNoise ?? 1);
  return { ...base, noiseMultiplier };
}

/** What the private evaluation releases: each evaluated client's one-hot accuracy bin (personalization's before and after: two, norm sqrt 2). */
export const evaluationReleaseShapes = {
  evaluation: { clip: 1, length: accuracyBins },
  personalization: { clip: Math.SQRT2, length: 2 * accuracyBins },
} as const;

/**
 * distributedDpSum's options for the evaluation's histograms but their clip: --eval-noise,
 * --ddp-bits, and the group sizes. The evaluated clients (all, or --eval-clients) are cut into
 * secure groups of at least --min-clients (cohort.ts secureGroups), a number known from the
 * options, as no evaluated client drops out: the noise is calibrated for the smallest group, so
 * each group's sum carries about --eval-noise's, and the modulus has room for every evaluated client.
 */
export function evaluationReleaseOptions(config: DistributedDpRunOptions): Omit<DistributedDpOptions, "clip"> {
  const clients = config.clients ?? config.clientsPerRound;
  const evaluated = (config.evalClients ?? 0) > 0 ? Math.min(config.evalClients!, clients) : clients;
  const groups = secureGroupCount(evaluated, config.chunkClients ?? evaluated, Math.min(config.minClients, evaluated));
  return { noiseMultiplier: config.evalNoise ?? 5, bits: config.ddpBits ?? 16, minClients: Math.floor(evaluated / groups), maxClients: evaluated };
}

/** The calibration of a release of `kind` (what distributedDpSum computes from the same options when the evaluation is traced). */
export function evaluationCalibration(config: DistributedDpRunOptions, kind: keyof typeof evaluationReleaseShapes): DistributedDpCalibration {
  const { clip, length } = evaluationReleaseShapes[kind];
  return calibrateDistributedDp({ ...evaluationReleaseOptions(config), clip, dimension: hadamardLength(length) });
}

/** The evaluations' releases by the end of round `rounds` (evaluation-releases.ts), with their calibrations. */
export function evaluationReleasesOf(config: DistributedDpRunOptions, rounds: number, final: boolean): DistributedDpReleases[] {
  const { evaluations, personalizations } = evaluationReleaseCounts(config, rounds, final);
  return [
    ...(evaluations > 0 ? [{ calibration: evaluationCalibration(config, "evaluation"), count: evaluations }] : []),
    ...(personalizations > 0 ? [{ calibration: evaluationCalibration(config, "personalization"), count: personalizations }] : []),
  ];
}

/** Epsilon at --ddp-delta after `rounds` rounds releasing a vector of `length` values and the evaluations' releases by then (`final`: evaluation-releases.ts), by --accountant. */
export function distributedDpEpsilonAfter(config: DistributedDpRunOptions, rounds: number, length: number, final = false): number {
  const cal = calibrateDistributedDp({ ...distributedDpOptionsOf(config, length), dimension: hadamardLength(length) });
  return distributedDpEpsilonBy(config.accountant ?? "pld", cal, rounds, config.ddpDelta ?? 1e-5, evaluationReleasesOf(config, rounds, final));
}

/** A round's metrics column: the epsilon after it (null when there is no finite one). */
export function distributedDpColumns(config: DistributedDpRunOptions, round: number, length: number): { epsilon: number | null } {
  const epsilon = distributedDpEpsilonAfter(config, round, length);
  return { epsilon: Number.isFinite(epsilon) ? epsilon : null };
}
