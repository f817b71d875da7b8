/**
 * What a program's releases spend (docs/language.md "Privacy", "A program's budget"): epsilon at
 * delta after `rounds` runs of the program, each client taking part in a run with probability q
 * (Poisson sampling, as `fedtensor run` samples DP cohorts), by the PLD accountant (RDP as the
 * cross-check). `program.epsilon(...)`, `programEpsilon(program, ...)`, and the budget check of
 * `fedtensor check` and the checker plugin (checker-plugin/budget.ts) all price through here.
 *
 * A run's Gaussian releases (dpSum, dpMean and what is built on them, such as dpQuantile) see one
 * cohort: each adds N(0, (z_i C_i)^2) to a sum that one client moves by at most C_i, so together
 * they are one Gaussian mechanism of sensitivity 1 and noise multiplier (sum_i 1 / z_i^2)^(-1/2)
 * (Gaussian DP composes adaptively: Dong, Roth and Su 2022), which the cohort's Poisson sampling
 * then amplifies once: each run is one step of the Poisson-subsampled Gaussian. Each normal draw
 * adds the sampler's 2^-63 of total variation (dp-fedavg-epsilon.ts). A distributed-DP sum is
 * priced by distributed-dp-pld.ts, with no amplification (its server sees who took part).
 */
import { ftError } from "../../errors/error.js";
import { normalSamplerDeltaPerDraw } from "../../ir/normal.js";
import { calibrateDistributedDp } from "../../ir/distributed-dp-calibration.js";
import type { Graph, ProgramIR } from "../../ir/types.js";
import { checkBudget, type ProgramBudgetOption } from "../../front/budget.js";
import { distributedDpEpsilon } from "./distributed-dp.js";
import { distributedDpPldEpsilon } from "./distributed-dp-pld.js";
import { dpFedAvgEpsilon, dpFedAvgPldEpsilon } from "./dp-fedavg-epsilon.js";

/**
 * A program's declared budget: `program(inputs, body, { budget })`.
 *
 * @example
 * const budget: ProgramBudget = { epsilon: 3, delta: 1e-5, rounds: 100, samplingRate: 0.01 };
 */
export type ProgramBudget = ProgramBudgetOption;

export type AccountantChoice = "pld" | "rdp";

/**
 * What to price: any of the budget's numbers, which take the program's budget's where absent.
 *
 * @example
 * const options: ProgramEpsilonOptions = { samplingRate: 0.01, rounds: 100, delta: 1e-5, accountant: "rdp" };
 */
export interface ProgramEpsilonOptions {
  readonly samplingRate?: number;
  readonly rounds?: number;
  readonly delta?: number;
  /** PLD (the default) or RDP (the cross-check). */
  readonly accountant?: AccountantChoice;
}

/**
 * One kind of Gaussian release: its noise multiplier, calls per run, and normal draws per call.
 *
 * @example
 * const release: GaussianRelease = { noiseMultiplier: 1.1, calls: 1, draws: 7850 };
 */
export interface GaussianRelease {
  readonly noiseMultiplier: number;
  readonly calls: number;
  readonly draws: number;
}

/**
 * What a program's runs spend, from `program.epsilon()` or `programEpsilon(program, ...)`:
 * epsilon at delta over `rounds` runs at sampling rate `samplingRate`, by `accountant`, and
 * whether that is within the program's declared budget when it has one.
 *
 * @example
 * const spent: ProgramSpent = await round.epsilon({ samplingRate: 0.01, rounds: 100, delta: 1e-5 });
 */
export interface ProgramSpent {
  readonly epsilon: number;
  readonly delta: number;
  readonly rounds: number;
  readonly samplingRate: number;
  readonly accountant: AccountantChoice;
  /** The one Gaussian mechanism a run's dpSum releases make together (absent without any). */
  readonly noiseMultiplier?: number;
  /** The program's budget, and whether the spend is within it (absent when it has none). */
  readonly budget?: Required<ProgramBudget>;
  readonly withinBudget?: boolean;
}

/**
 * The noise multiplier of a run's Gaussian releases taken together: (sum of calls / z^2)^(-1/2).
 *
 * @example
 * combinedNoiseMultiplier([{ noiseMultiplier: 1, calls: 4, draws: 1 }]); // 0.5
 */
export function combinedNoiseMultiplier(releases: readonly GaussianRelease[]): number {
  return releases.reduce((sum, r) => sum + r.calls / (r.noiseMultiplier * r.noiseMultiplier), 0) ** -0.5;
}

/**
 * Epsilon at `delta` after `rounds` runs whose Gaussian releases are `releases`, each run's cohort a Poisson sample of rate q.
 *
 * @example
 * const epsilon = gaussianReleasesEpsilon([{ noiseMultiplier: 1.1, calls: 1, draws: 7850 }], 0.01, 1000, 1e-5);
 */
export function gaussianReleasesEpsilon(releases: readonly GaussianRelease[], q: number, rounds: number, delta: number, accountant: AccountantChoice = "pld"): number {
  const called = releases.filter((r) => r.calls > 0);
  if (called.length === 0) return 0;
  const mechanism = {
    samplingRate: q,
    noiseMultiplier: combinedNoiseMultiplier(called),
    noiseDrawsPerRound: called.reduce((sum, r) => sum + r.calls * r.draws, 0),
    samplerDeltaPerDraw: normalSamplerDeltaPerDraw,
  };
  return accountant === "rdp" ? dpFedAvgEpsilon(mechanism, rounds, delta).epsilon : dpFedAvgPldEpsilon(mechanism, rounds, delta);
}

interface FoundRelease {
  readonly aggregator: string;
  readonly attrs: Readonly<Record<string, unknown>>;
  /** Calls per run; null inside a loop of unknown length. */
  readonly calls: number | null;
  /** Values it releases (its sums' elements); null when a dim is not a number. */
  draws: number | null;
  readonly private: boolean;
}

/** Each release of the program with its calls per run, read from the IR as program.privacy reads it. */
function releasesOf(ir: ProgramIR): Map<number, FoundRelease> {
  const found = new Map<number, FoundRelease>();
  const walk = (graph: Graph, calls: number | null): void => {
    for (const node of graph.nodes) {
      const release = node.attrs.release;
      if (typeof release === "number") {
        const output = ir.values[node.outputs[0]!]!;
        const size = output.shape.every((d) => typeof d === "number") ? (output.shape as number[]).reduce((a, b) => a * b, 1) : null;
        const seen = found.get(release);
        if (seen === undefined) {
          const aggregator = node.op === "secure_sum" ? "secureSum" : String(node.attrs.aggregator);
          found.set(release, { aggregator, attrs: node.attrs, calls, draws: size, private: ir.values[node.inputs[0]!]!.private === true });
        } else if (seen.draws !== null) seen.draws = size === null ? null : seen.draws + size;
      }
      const length = node.op === "scan" ? node.attrs.length : 1;
      const inner = calls === null || typeof length !== "number" ? null : calls * length;
      for (const body of node.bodies ?? []) walk(body, inner);
    }
  };
  walk(ir.graph, 1);
  return found;
}

/**
 * What `rounds` runs of the program spend at `delta`, each client in a run's cohort with
 * probability `samplingRate`; the options not given come from the program's budget (1 round,
 * rate 1 and delta 1e-5 without one). FT364 for a release it cannot price; FT363 for bad numbers.
 *
 * @example
 * const { epsilon } = programEpsilon(round, { samplingRate: 0.01, rounds: 100, delta: 1e-5 });
 */
export function programEpsilon(program: { readonly ir: ProgramIR; readonly budget?: ProgramBudget | undefined }, options: ProgramEpsilonOptions = {}): ProgramSpent {
  const budget = program.budget === undefined ? undefined : checkBudget(program.budget);
  // The numbers asked pass the budget's checks (FT363); a query has no epsilon, so any valid one stands in.
  const { delta, rounds, samplingRate } = checkBudget({
    epsilon: 1,
    delta: options.delta ?? budget?.delta ?? 1e-5,
    rounds: options.rounds ?? budget?.rounds ?? 1,
    samplingRate: options.samplingRate ?? budget?.samplingRate ?? 1,
  });
  const asked = { delta, rounds, samplingRate };
  const accountant = options.accountant ?? "pld";
  if (accountant !== "pld" && accountant !== "rdp") throw ftError("FT305", { option: "accountant", why: `${String(accountant)} given; "pld" or "rdp"` });
  const gaussians: GaussianRelease[] = [];
  let distributed: FoundRelease | undefined;
  for (const [number, release] of releasesOf(program.ir)) {
    const name = `${release.aggregator} #${number}`;
    if (release.calls === null) throw ftError("FT364", { release: name, why: "it is called in a loop of unknown length" });
    if (release.aggregator === "secureSum") {
      if (release.private) throw ftError("FT364", { release: name, why: "a secure sum of private data releases their exact sum: no epsilon covers it" });
      continue;
    }
    if (release.aggregator === "distributedDpSum") {
      if (distributed !== undefined || release.calls !== 1) throw ftError("FT364", { release: name, why: "one distributedDpSum called once a run is priced here; price more with distributedDpPldEpsilon" });
      distributed = release;
      continue;
    }
    const z = release.attrs.noiseMultiplier;
    if (typeof z !== "number") throw ftError("FT364", { release: name, why: "its noise multiplier is not a number in the program (an input or computed)" });
    if (release.draws === null) throw ftError("FT364", { release: name, why: "the shape it releases is not known before it runs" });
    gaussians.push({ noiseMultiplier: z, calls: release.calls, draws: release.draws });
  }
  if (distributed !== undefined && gaussians.length > 0) throw ftError("FT364", { release: "distributedDpSum", why: "a program with dpSum and distributedDpSum releases is priced with PldAccountant directly" });
  let epsilon: number;
  if (distributed !== undefined) {
    const a = distributed.attrs as Record<string, number>;
    const cal = calibrateDistributedDp({ clip: a.clip!, noiseMultiplier: a.noiseMultiplier!, bits: a.bits!, minClients: a.minClients!, maxClients: a.maxClients!, dimension: a.dimension!, beta: a.beta!, kStddevs: a.kStddevs! });
    epsilon = accountant === "rdp" ? distributedDpEpsilon(cal, asked.rounds, asked.delta).epsilon : distributedDpPldEpsilon(cal, asked.rounds, asked.delta);
  } else {
    epsilon = gaussianReleasesEpsilon(gaussians, asked.samplingRate, asked.rounds, asked.delta, accountant);
  }
  return {
    epsilon,
    ...asked,
    accountant,
    ...(gaussians.length === 0 ? {} : { noiseMultiplier: combinedNoiseMultiplier(gaussians) }),
    ...(budget === undefined ? {} : { budget, withinBudget: epsilon <= budget.epsilon }),
  };
}
