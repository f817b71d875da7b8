/**
 * When a private run's per-client evaluation releases its histograms (src/lib/run/private-eval.ts):
 * what its accountants count, the dp chain's (privacy.ts) and distributed DP's
 * (distributed-dp-run.ts), each pricing the releases by its own mechanism.
 */

/** The run options the schedule reads (a RunConfig is one). */
export interface EvaluationScheduleOptions {
  readonly clientHoldout?: number;
  readonly rounds?: number;
  readonly evalEvery?: number;
  readonly personalizeEpochs?: number;
}

/** The releases made by the end of a round: evaluations' histograms, and personalization's (before and after, one release). */
export interface EvaluationReleaseCounts {
  readonly evaluations: number;
  readonly personalizations: number;
}

/**
 * The releases of a run with --client-holdout by the end of round `rounds`: an evaluation on
 * every --eval-every-th round and on --rounds; with `final` (the run's result, and a target
 * epsilon's stop rule, which counts round `rounds` as the last) also on round `rounds` whatever
 * it is, and personalization's after it. None without --client-holdout.
 */
export function evaluationReleaseCounts(config: EvaluationScheduleOptions, rounds: number, final: boolean): EvaluationReleaseCounts {
  if ((config.clientHoldout ?? 0) === 0 || rounds === 0) return { evaluations: 0, personalizations: 0 };
  const every = config.evalEvery ?? 1;
  const last = final || rounds === config.rounds ? (rounds % every === 0 ? 0 : 1) : 0;
  return { evaluations: Math.floor(rounds / every) + last, personalizations: final && (config.personalizeEpochs ?? 0) > 0 ? 1 : 0 };
}
