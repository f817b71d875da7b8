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
 */
import { hadamardLength } from "../../front/rotation.js";
import type { DistributedDpOptions } from "../aggregators/stages.js";
import { calibrateDistributedDp, distributedDpEpsilonBy, noiseMultiplierForEpsilon } from "../privacy/distributed-dp.js";

/** The run options distributed DP reads (a RunConfig is one). */
export interface DistributedDpRunOptions {
  readonly rounds: number;
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

/** The mechanism's options from a run's config, for a released vector of `length` values: with --ddp-target-epsilon, the noise multiplier that spends it in --rounds rounds. */
export function distributedDpOptionsOf(config: DistributedDpRunOptions, length: number): DistributedDpOptions {
  const base = { clip: config.ddpClip ?? 1, bits: config.ddpBits ?? 16, minClients: config.minClients, maxClients: config.clientsPerRound };
  const target = config.ddpTargetEpsilon ?? 0;
  const noiseMultiplier = target > 0 ? noiseMultiplierForEpsilon({ ...base, dimension: hadamardLength(length) }, target, config.rounds, config.ddpDelta ?? 1e-5, config.accountant) : (config.ddpNoise ?? 1);
  return { ...base, noiseMultiplier };
}

/** Epsilon at --ddp-delta after `rounds` rounds releasing a vector of `length` values, by --accountant. */
export function distributedDpEpsilonAfter(config: DistributedDpRunOptions, rounds: number, length: number): number {
  const cal = calibrateDistributedDp({ ...distributedDpOptionsOf(config, length), dimension: hadamardLength(length) });
  return distributedDpEpsilonBy(config.accountant ?? "pld", cal, rounds, config.ddpDelta ?? 1e-5);
}

/** A round's metrics column: the epsilon after it (null when there is no finite one). */
export function distributedDpColumns(config: DistributedDpRunOptions, round: number, length: number): { epsilon: number | null } {
  const epsilon = distributedDpEpsilonAfter(config, round, length);
  return { epsilon: Number.isFinite(epsilon) ? epsilon : null };
}
