/**
 * `fedtensor serve --aggregator distributed-dp`: the secure rounds of secure.ts, with each
 * member's scaled accumulator encoded by the distributed-DP codec (clip to L2 norm --ddp-clip,
 * rotate, round, add discrete Gaussian noise, all at the member) and summed by SecAgg+ mod
 * 2^--ddp-bits as it is; the server decodes the survivors' sum. The noise is calibrated for
 * --min-clients survivors: a round in which fewer send their masked input aborts before its
 * unmask step, so the server never learns a sum with less noise than accounted.
 *
 * The rotation key is fresh each round, from the run's secret (saved to the run folder's
 * secret.key; --resume reads it back), never from --seed; the server sends it to the cohort in
 * the round's task. It is no secret from the server in this threat model: the server learns the
 * noisy sum only, as docs/deployment.md says. The epsilon column is `fedtensor run`'s accounting
 * (distributed-dp-run.ts) with the accumulator as the released vector.
 */
import { distributedDpColumns, distributedDpOptionsOf } from "../../lib/run/distributed-dp-run.js";
import { accountantOf } from "../../lib/run/privacy.js";
import type { RunConfig } from "../../lib/run/config.js";
import { RunSecret } from "../../lib/privacy/secret.js";

/** What serve's rounds need of distributed DP: the codec's options, the rounds' keys and the metrics column. */
export interface ServedDistributedDp {
  /** The codec's options for an accumulator of `length` values (--ddp-target-epsilon's noise depends on it). */
  options(length: number): ReturnType<typeof distributedDpOptionsOf>;
  rotationKey(round: number): [number, number];
  /** The epsilon after `round` rounds for an accumulator of `length` values (null before the length is known). */
  columns(round: number, length: number | undefined): { epsilon: number | null };
  /** The accountant the epsilon column comes from, which each row names as `fedtensor run`'s rows do. */
  readonly accountant: string;
}

/**
 * The run's distributed DP: its secret (new and saved, or read back on --resume, or from
 * --dp-insecure-seed as `fedtensor run` does), and the codec's options.
 */
export async function servedDistributedDp(config: RunConfig, resumed: boolean, log: (line: string) => void): Promise<ServedDistributedDp> {
  const secret = (config.dpInsecureSeed ?? 0) > 0 ? RunSecret.fromInsecureSeed(config.dpInsecureSeed!) : resumed ? await RunSecret.load(config.out) : RunSecret.generate();
  if (!resumed && !((config.dpInsecureSeed ?? 0) > 0)) await secret.save(config.out);
  // A served run evaluates no client's held-out data (coordinator.ts): no evaluation release to price.
  const released = { ...config, clientHoldout: 0 };
  // The same length every round: calibrated (a bisection with --ddp-target-epsilon) and logged once.
  const calibrated = new Map<number, ReturnType<typeof distributedDpOptionsOf>>();
  return {
    options: (length) => {
      let options = calibrated.get(length);
      if (options === undefined) {
        calibrated.set(length, (options = distributedDpOptionsOf(released, length)));
        const target = (config.ddpTargetEpsilon ?? 0) > 0 ? ` (--ddp-target-epsilon ${config.ddpTargetEpsilon} over ${config.rounds} rounds at delta ${config.ddpDelta ?? 1e-5})` : "";
        log(`distributed DP: noise multiplier ${options.noiseMultiplier}${target}, clip ${options.clip}, ${options.bits} bits, calibrated for ${options.minClients} to ${options.maxClients} clients, an accumulator of ${length} values`);
      }
      return options;
    },
    rotationKey: (round) => secret.roundKey("distributed-dp", round),
    columns: (round, length) => (length === undefined ? { epsilon: null } : distributedDpColumns(released, round, length)),
    accountant: accountantOf(config)!,
  };
}
