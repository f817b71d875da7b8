/**
 * `fedtensor audit`: an empirical check of a DP run's accountant with canary clients that go
 * through the run's real chain (its dp stage, as aggregatorOf(runStages(config)) builds it),
 * the run's Poisson sampler and its secret (the OS's, or --dp-insecure-seed's in the research
 * mode), in one run of --rounds rounds.
 *
 * m canaries, each a random direction of norm --dp-clip (from the public --seed: the auditor
 * knows them), join the run independently with probability 1/2 (a coin of node:crypto); the
 * others are --clients clients with public updates of random directions. Each round samples
 * every client (the others first, then the canaries that joined) by the run's Poisson sampler
 * from the run's secret and releases the chain's noisy aggregate of the sampled updates. The
 * auditor sees the releases and knows everything public: the updates, the config and, in the
 * research mode, the seed the noise and cohorts come from, from which it regenerates the
 * release without the canaries and subtracts it. A canary's score is its direction's inner
 * product with the sum of what remains (the final model's delta with learning rate 1).
 *
 * - Steinke, Nasr and Jagielski 2023 ("Privacy Auditing with One (1) Training Run", their
 *   Theorem 3.1 and Algorithm 2's p-value with delta): guess "in" for the k highest scores and
 *   "out" for the k lowest (k = m / 10, fixed before the run); the largest epsilon whose
 *   p-value of that many correct guesses is below 5% is a lower bound at 95% confidence.
 * - Andrew et al. 2024 ("One-shot Empirical Privacy Estimation for Federated Learning"): the
 *   canaries that did not join are random directions never inserted, the scores' null law; the
 *   joined ones' mean shift over the null's standard deviation is a Gaussian mechanism's mu, and
 *   its epsilon at the run's delta (by the PLD accountant) is the estimate. An estimate, not a
 *   bound: printed beside it.
 */
import { randomInt } from "node:crypto";
import { ftError } from "../../errors/error.js";
import { atClients, f32 } from "../../front/specs.js";
import { program } from "../../front/program.js";
import { interpret } from "../../interpret/reference.js";
import { poissonCohort } from "../data/federated.js";
import { aggregatorOf } from "../aggregators/aggregator.js";
import { PldAccountant } from "../privacy/pld/accountant.js";
import { RunSecret } from "../privacy/secret.js";
import { Rng } from "../random.js";
import { runStages, type ChainOptions } from "./aggregator-chain.js";
import type { RunConfig } from "./config.js";
import { accountantOf, epsilonAfter, isDpRun, samplingRateOf, expectedClientsOf } from "./privacy.js";

export interface AuditOptions {
  /** Canary clients (each joins with probability 1/2). */
  readonly canaries: number;
  /** The length of the released vector. */
  readonly dimension: number;
}

export interface AuditResult {
  /** Steinke et al.'s lower bound on epsilon, 95% confidence. */
  readonly lowerBound: number;
  /** Andrew et al.'s estimate. */
  readonly estimate: number;
  /** The accountant's epsilon for the same rounds and release. */
  readonly accountant: number;
  readonly accountantName: string;
  readonly guesses: number;
  readonly correct: number;
  readonly joined: number;
}

/** log P[Binomial(r, p) = k]. */
function logBinomialPmf(r: number, k: number, p: number): number {
  let logChoose = 0;
  for (let i = 1; i <= k; i++) logChoose += Math.log((r - k + i) / i);
  return logChoose + k * Math.log(p) + (r - k) * Math.log1p(-p);
}

/**
 * Steinke et al.'s p-value of v or more correct guesses out of r among m canaries under
 * (epsilon, delta)-DP: P[Binomial(r, e^eps / (1 + e^eps)) >= v] + 2 m delta max_i P[v > B >= v - i] / i.
 */
export function oneRunPValue(m: number, r: number, v: number, epsilon: number, delta: number): number {
  const p = 1 / (1 + Math.exp(-epsilon));
  let beta = 0;
  for (let k = v; k <= r; k++) beta += Math.exp(logBinomialPmf(r, k, p));
  let [alpha, sum] = [0, 0];
  for (let i = 1; i <= v; i++) {
    sum += Math.exp(logBinomialPmf(r, v - i, p));
    alpha = Math.max(alpha, sum / i);
  }
  return Math.min(1, beta + alpha * delta * 2 * m);
}

/** The largest epsilon whose p-value is below `level` (0 when even epsilon 0's is not). */
export function oneRunLowerBound(m: number, r: number, v: number, delta: number, level = 0.05): number {
  if (oneRunPValue(m, r, v, 0, delta) >= level) return 0;
  let [lo, hi] = [0, 1];
  while (oneRunPValue(m, r, v, hi, delta) < level && hi < 100) hi *= 2;
  for (let i = 0; i < 50; i++) {
    const mid = (lo + hi) / 2;
    if (oneRunPValue(m, r, v, mid, delta) < level) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** A random direction of norm `norm`. */
function direction(rng: Rng, d: number, norm: number): Float32Array {
  const v = Array.from({ length: d }, () => rng.normal());
  const length = Math.hypot(...v);
  return Float32Array.from(v, (x) => (x / length) * norm);
}

export function auditRun(config: RunConfig, options: AuditOptions): AuditResult {
  if (!isDpRun(config)) throw ftError("FT305", { option: "--aggregator", why: `${config.aggregator} has no dp stage: fedtensor audit checks the accountant of a DP run` });
  if (typeof config.dpClip !== "number") throw ftError("FT305", { option: "--dp-clip", why: "fedtensor audit takes a fixed clip norm (adaptive clipping's count is a second release)" });
  const { canaries: m, dimension: d } = options;
  if (!(Number.isInteger(m) && m >= 10)) throw ftError("FT305", { option: "--canaries", why: `${m} given; an integer >= 10` });
  const clip = config.dpClip;
  const publicRng = Rng.fromSeed(config.seed).fork("audit");
  const others = Array.from({ length: config.clients }, () => direction(publicRng, d, clip * (0.5 + 0.5 * publicRng.float())));
  const canaryDirections = Array.from({ length: m }, () => direction(publicRng, d, clip));
  const joins = Array.from({ length: m }, () => randomInt(2) === 1);
  const insecure = (config.dpInsecureSeed ?? 0) > 0;
  const secret = insecure ? RunSecret.fromInsecureSeed(config.dpInsecureSeed!) : RunSecret.generate();
  const chain = aggregatorOf(runStages(config as unknown as ChainOptions, 1, d));
  const release = program(
    { ...chain.state, ...chain.inputs, u: atClients(f32([d]), { private: true }), mask: atClients(f32([1, 1])), count: atClients(f32([])) } as never,
    ((inputs: Record<string, unknown>) => {
      const { u, mask, count, ...rest } = inputs;
      return (chain.next as (...args: unknown[]) => { value: unknown })(u, { mask, count }, rest).value;
    }) as never,
    { name: "audited_release" },
  );
  const q = samplingRateOf(config);
  const key = secret.key("dp-noise");
  /** The release of a round over `clients` (updates), of which `cohort` (positions) are sampled. */
  const run = (clients: readonly Float32Array[], cohort: Int32Array, round: number): Float32Array => {
    const n = Math.max(1, clients.length);
    const u = new Float32Array(n * d);
    for (const i of cohort) u.set(clients[i]!, i * d);
    const inputs = {
      ...chain.initialize(),
      u: { shape: [n, d], data: u },
      mask: { shape: [n, 1, 1], data: new Float32Array(n).fill(1) },
      count: { shape: [n], data: new Float32Array(n).fill(1) },
      clip,
      noiseMultiplier: config.dpNoise ?? 1,
      expectedClients: expectedClientsOf(config),
      key,
      round,
    };
    return (interpret(release.ir, inputs as never) as unknown as { data: Float32Array }).data;
  };
  const pool = [...others, ...canaryDirections.filter((_, i) => joins[i])];
  const remains = new Float64Array(d);
  for (let round = 1; round <= config.rounds; round++) {
    const released = run(pool, poissonCohort(pool.length, q, secret.cohortStream(round)), round);
    // The research mode's seed is public: the auditor regenerates the others' cohort (the first draws) and the noise.
    const known = insecure ? run(others, poissonCohort(others.length, q, secret.cohortStream(round)), round) : undefined;
    for (let j = 0; j < d; j++) remains[j]! += released[j]! - (known?.[j] ?? 0);
  }
  const scores = canaryDirections.map((c) => c.reduce((s, x, j) => s + x * remains[j]!, 0) / (clip * clip));
  const order = scores.map((s, i) => [s, i] as const).sort((a, b) => b[0] - a[0]);
  const k = Math.max(1, Math.floor(m / 10));
  const correct = order.slice(0, k).filter(([, i]) => joins[i]).length + order.slice(-k).filter(([, i]) => !joins[i]).length;
  const delta = config.dpDelta ?? 1e-5;
  const lowerBound = oneRunLowerBound(m, 2 * k, correct, delta);
  const inScores = scores.filter((_, i) => joins[i]);
  const outScores = scores.filter((_, i) => !joins[i]);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const sd = Math.sqrt(mean(outScores.map((s) => (s - mean(outScores)) ** 2)));
  const mu = (mean(inScores) - mean(outScores)) / sd;
  const estimate = mu > 0 && Number.isFinite(mu) ? new PldAccountant().step(1, 1 / mu, 1).epsilon(delta) : 0;
  return {
    lowerBound,
    estimate,
    accountant: epsilonAfter(config, config.rounds, d),
    accountantName: accountantOf(config)!,
    guesses: 2 * k,
    correct,
    joined: inScores.length,
  };
}
