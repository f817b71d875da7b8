/**
 * The empirical privacy audit (audit.test.ts's method) of the private evaluation's release in a
 * distributed-dp run (src/lib/algorithms/private-evaluation.ts): each client's held-out
 * accuracy as a one-hot bin vector, clipped to 1, rotated, rounded and noised by the client
 * itself with its own key (distributedDpSum), so the server learns only the noised sum. One
 * release is priced by distributed DP's PLD accountant from the calibration the run uses
 * (src/lib/run/distributed-dp-run.ts evaluationCalibration).
 *
 * Neighbouring cohorts as the accountant's relation: the canary client, which classifies both
 * its held-out examples right (adding 1 to the top bin), or the same client holding nothing out
 * (its vector zeros, its noise still added). Each trial is a fresh release: a fresh rotation
 * key and fresh client keys, from a secret drawn from the OS.
 * - At the run's noise the adversary thresholds the top bin's released count: the Clopper-Pearson
 *   lower bound on epsilon must stay below the price.
 * - With the noise weakened 40-fold, the same adversary and the same trials must put the bound
 *   above that price: the audit can see a release that spends more than it claims.
 */
import { describe, expect, test } from "vitest";
import { interpret } from "../../src/index.js";
import { accuracyBins, privateEvaluationProgram, type DistributedDpHistograms } from "../../src/lib/algorithms/private-evaluation.js";
import { calibrateDistributedDp } from "../../src/lib/privacy/distributed-dp.js";
import { distributedDpPldEpsilon } from "../../src/lib/privacy/distributed-dp-pld.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { evaluationCalibration } from "../../src/lib/run/distributed-dp-run.js";
import { host, tiny } from "../lib/helpers.js";
import { deadline } from "../helpers/deadline.js";
import { auditLowerBound } from "./audit-bound.js";
import { canary, others, params } from "./evaluation-audit-cohort.js";

const evalNoise = 4;
const clients = others.length + 1;
const topBin = accuracyBins - 1;
/** --ddp-bits: 10 keeps each client's discrete Gaussian table small (sigma a few dozen steps), so a release is quick to interpret. */
const bits = 10;
/** The run options the release is calibrated from: the seven clients all evaluated, --min-clients 7, --ddp-bits 10. */
const runOptions = (noise: number) => ({ rounds: 1, clients, clientsPerRound: clients, minClients: clients, ddpBits: bits, evalNoise: noise });
const mechanism = (noise: number): DistributedDpHistograms => ({ kind: "distributed-dp", options: { noiseMultiplier: noise, bits, minClients: clients, maxClients: clients } });

/** The released top-bin counts of `trials` fresh releases, the canary holding its examples out or not. */
function releases(noise: number, canaryHolds: boolean, trials: number, secret: RunSecret): number[] {
  const program = privateEvaluationProgram(tiny, mechanism(noise));
  const cohort = [...others, canary];
  const masks = cohort.flatMap((_, c) => (c < others.length || canaryHolds ? [1, 1] : [0, 0]));
  const data = {
    params,
    x: host([clients, 1, 2, 2], cohort.flatMap((c) => [c[0]!, c[1]!, c[3]!, c[4]!])),
    y: { shape: [clients, 1, 2], data: Int32Array.from(cohort.flatMap((c) => [c[2]!, c[5]!])) },
    mask: host([clients, 1, 2], masks),
    key: secret.roundKey("evaluation", 0),
  };
  return Array.from({ length: trials }, (_, trial) => {
    const clientKeys = { shape: [clients, 2], data: Int32Array.from(cohort.flatMap((_, c) => secret.clientKey(trial, c, "evaluation"))) };
    const out = interpret(program.ir, { ...data, part: trial, clientKeys } as never) as unknown as { histogram: { data: Float32Array } };
    return out.histogram.data[topBin]!;
  });
}

describe("privacy audit: the evaluation's histogram under distributed DP", () => {
  const price = distributedDpPldEpsilon(evaluationCalibration(runOptions(evalNoise), "evaluation"), 1, 1e-5);
  // 40 trials a half: enough for the weakened release to show a bound above 2, twice the price.
  const trials = 80;

  test("the run's calibration is the program's, and the price is one release's", async () => {
    const cal = evaluationCalibration(runOptions(evalNoise), "evaluation");
    expect(cal).toEqual(calibrateDistributedDp({ clip: 1, noiseMultiplier: evalNoise, bits, minClients: clients, maxClients: clients, dimension: 16 }));
    // The traced release, priced from its IR's own calibration, costs what the run's accountant charges.
    expect((await privateEvaluationProgram(tiny, mechanism(evalNoise)).epsilon({ rounds: 1, delta: 1e-5 })).epsilon).toBe(price);
    expect(price).toBeGreaterThan(0.5);
    expect(price).toBeLessThan(1.5);
  });

  test("at the run's noise the bound stays below the price; with the noise weakened it exceeds it", () => {
    const audit = (noise: number) => auditLowerBound(releases(noise, false, trials, RunSecret.generate()), releases(noise, true, trials, RunSecret.generate()));
    const bound = audit(evalNoise);
    expect(bound).toBeLessThan(price);
    const weak = audit(evalNoise / 40);
    expect(weak).toBeGreaterThan(price);
  }, deadline(60_000));
});
