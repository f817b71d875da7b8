/**
 * A private run's privacy plan, known before any data is read (`fedtensor plan`, and the
 * --max-epsilon refusal of `fedtensor run` and `fedtensor serve`): the epsilon after each round
 * by the run's accountant, the total over --rounds, and the noise multiplier a target epsilon
 * needs. Everything it reads is in the config and the model's parameter specs (the noise draws
 * a round makes, for the sampler's share), which is why it can run first.
 *
 * The accountant is --accountant (PLD by default) for the dp stage and distributed DP alike
 * (src/lib/run/privacy.ts accountantOf). A served run's accumulator is the model's
 * parameters, so the plan's released length is the one `fedtensor run` releases.
 */
import { ftError } from "../../errors/error.js";
import { chainHas } from "./aggregator-chain.js";
import type { RunConfig } from "./config.js";
import { distributedDpEpsilonAfter } from "./distributed-dp-run.js";
import { accountantOf, epsilonAfter, isDpRun, releasedLength, samplingRateOf } from "./privacy.js";
import { noiseMultiplierForEpsilon } from "../privacy/distributed-dp.js";
import { smallestNoiseFor } from "../privacy/calibrate.js";
import { hadamardLength } from "../../front/rotation.js";
import { modelFor } from "./setup.js";

export interface PlanRow {
  readonly round: number;
  /** What this round adds to epsilon (the total after it less the total before). */
  readonly spent: number;
  /** Epsilon after it. */
  readonly total: number;
}

export interface PrivacyPlan {
  /** "dp" or "distributed-dp". */
  readonly stage: string;
  readonly accountant: string;
  readonly delta: number;
  readonly noiseMultiplier: number;
  /** Each client's probability of joining a round (dp: Poisson sampling); 1 for distributed DP, which claims no amplification. */
  readonly samplingRate: number;
  readonly rounds: number;
  /** The rounds shown: every round up to 20, else 20 evenly spaced ones and the last. */
  readonly rows: readonly PlanRow[];
  readonly total: number;
  /** With a target: the smallest noise multiplier whose --rounds rounds stay within it. */
  readonly target?: { readonly epsilon: number; readonly noiseMultiplier: number };
}

/** The parameters a model releases a round, from its specs (no tensor, no data). */
export function parameterCount(config: RunConfig): number {
  const specs = Object.values(modelFor(config).params) as { shape: readonly (number | string | null)[] }[];
  return specs.reduce((total, spec) => total + spec.shape.reduce<number>((n, d) => n * Number(d), 1), 0);
}

/** The rounds a plan shows. */
function shownRounds(rounds: number): number[] {
  if (rounds <= 20) return Array.from({ length: rounds }, (_, i) => i + 1);
  const every = Array.from({ length: 20 }, (_, i) => Math.max(1, Math.round(((i + 1) * rounds) / 20)));
  return [...new Set([1, ...every, rounds])];
}

/** The plan of a run whose chain has dp or distributed-dp; undefined for other runs (nothing is accounted). */
export function privacyPlan(config: RunConfig, parameters: number, targetEpsilon?: number): PrivacyPlan | undefined {
  const dp = isDpRun(config);
  if (!dp && !chainHas(config.aggregator, "distributed-dp")) return undefined;
  const length = releasedLength(config, parameters);
  const epsilonOf = (c: RunConfig, rounds: number) => (rounds === 0 ? 0 : dp ? epsilonAfter(c, rounds, parameters) : distributedDpEpsilonAfter(c, rounds, length));
  const rows: PlanRow[] = [];
  for (const round of shownRounds(config.rounds)) {
    const total = epsilonOf(config, round);
    rows.push({ round, spent: total - epsilonOf(config, round - 1), total });
  }
  const total = epsilonOf(config, config.rounds);
  let target: PrivacyPlan["target"];
  if (targetEpsilon !== undefined) {
    const noiseMultiplier = dp
      ? smallestNoiseFor(targetEpsilon, (z) => epsilonAfter({ ...config, dpNoise: z }, config.rounds, parameters))
      : noiseMultiplierForEpsilon(
          { clip: config.ddpClip ?? 1, bits: config.ddpBits ?? 16, minClients: config.minClients, maxClients: config.clientsPerRound, dimension: hadamardLength(length) },
          targetEpsilon,
          config.rounds,
          config.ddpDelta ?? 1e-5,
          config.accountant,
        );
    target = { epsilon: targetEpsilon, noiseMultiplier };
  }
  return {
    stage: dp ? "dp" : "distributed-dp",
    accountant: accountantOf(config)!,
    delta: (dp ? config.dpDelta : config.ddpDelta) ?? 1e-5,
    noiseMultiplier: (dp ? config.dpNoise : config.ddpTargetEpsilon ? undefined : config.ddpNoise) ?? NaN,
    samplingRate: dp ? samplingRateOf(config) : 1,
    rounds: config.rounds,
    rows,
    total,
    ...(target === undefined ? {} : { target }),
  };
}

const fixed = (x: number) => (Number.isFinite(x) ? x.toFixed(4) : "no finite epsilon");

/** The plan as `fedtensor plan` prints it. */
export function formatPlan(plan: PrivacyPlan): string {
  const noise = Number.isNaN(plan.noiseMultiplier) ? "calibrated to --ddp-target-epsilon" : `noise multiplier ${plan.noiseMultiplier}`;
  const lines = [
    `${plan.stage}: ${noise}, sampling rate ${plan.samplingRate}, delta ${plan.delta}, accountant ${plan.accountant}`,
    "round  spent this round  epsilon after it",
    ...plan.rows.map((r) => `${String(r.round).padStart(5)}  ${fixed(r.spent).padStart(16)}  ${fixed(r.total).padStart(16)}`),
    `total over ${plan.rounds} rounds: epsilon ${fixed(plan.total)} at delta ${plan.delta}`,
  ];
  if (plan.target !== undefined) lines.push(`epsilon ${plan.target.epsilon} in ${plan.rounds} rounds needs a noise multiplier of at least ${plan.target.noiseMultiplier} (${plan.accountant})`);
  return lines.join("\n");
}

/** FT360 when the run's plan spends more than --max-epsilon (0: no limit); checked before any data is read. */
export function refuseOverMaxEpsilon(config: RunConfig): void {
  const max = config.maxEpsilon ?? 0;
  if (!(max > 0)) return;
  const plan = privacyPlan(config, parameterCount(config));
  if (plan === undefined || plan.total <= max) return;
  throw ftError("FT360", { planned: fixed(plan.total), max: String(max), rounds: String(config.rounds), why: `${plan.stage} with ${plan.accountant}, delta ${plan.delta}` });
}
