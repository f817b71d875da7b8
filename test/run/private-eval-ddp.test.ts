/**
 * Per-client evaluation in a distributed-dp run (src/lib/run/private-eval.ts): with
 * --client-holdout and --personalize-epochs the clients' accuracies stay on the clients; the
 * server learns histograms each client noised itself under a secure sum, and the run's epsilon
 * composes their releases with the rounds' (distributedDpComposedPldEpsilon; RDP order by order
 * with --accountant rdp). The expected epsilon is composed here from the releases' bounds with
 * this file's own Gaussian curve and solver, and no per-client file may be in the run folder.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { accuracyBins } from "../../src/lib/algorithms/private-evaluation.js";
import { calibrateDistributedDp, distributedDpComposedEpsilon, distributedDpRoundRdp } from "../../src/lib/privacy/distributed-dp.js";
import { distributedDpPldBound, type DistributedDpReleases } from "../../src/lib/privacy/distributed-dp-pld.js";
import { DEFAULT_RDP_ORDERS, logErfc, rdpToEpsilon } from "../../src/lib/privacy/rdp.js";
import { loadRunConfig } from "../../src/lib/run/config.js";
import { distributedDpEpsilonAfter, distributedDpOptionsOf } from "../../src/lib/run/distributed-dp-run.js";
import { evaluationFiles } from "../../src/lib/run/evaluation-files.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { inProcessCli } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

/** The run: logistic regression (7850 parameters, rotated to 8192) on 20 MNIST clients, 5 a round, 2 rounds, each evaluated on 5 clients, then personalization. */
const options = ["--model", "logistic", "--clients", "20", "--clients-per-round", "5", "--batch-size", "100", "--rounds", "2", "--eval-every", "1", "--aggregator", "distributed-dp", "--min-clients", "3", "--client-holdout", "0.2", "--eval-clients", "5", "--personalize-epochs", "1"];
const delta = 1e-5;
/** The releases' calibrations as the options fix them: the rounds' for 3 to 5 clients; the histograms' for the 5 evaluated clients in one group (at least --min-clients 3, at most --chunk-clients 100), at --eval-noise 5. */
const rounds = calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 3, maxClients: 5, dimension: 8192 });
const evaluation = calibrateDistributedDp({ clip: 1, noiseMultiplier: 5, bits: 16, minClients: 5, maxClients: 5, dimension: 16 });
const personalization = calibrateDistributedDp({ clip: Math.SQRT2, noiseMultiplier: 5, bits: 16, minClients: 5, maxClients: 5, dimension: 32 });

/** log Phi(x), the standard normal's log CDF. */
const logPhi = (x: number) => Math.log(0.5) + logErfc(-x / Math.SQRT2);

/**
 * The smallest epsilon (bisection) with e^A delta_G(eps - 2A) + (1 + e^eps) T <= delta, where
 * each release is a Gaussian of multiplier z_i up to ratio e^(a_i) after total variation T_i:
 * mu = sqrt(sum count / z^2), A = sum count a, T = sum count T_i.
 */
function composedEpsilon(releases: readonly DistributedDpReleases[]): number {
  const bounds = releases.map((r) => ({ count: r.count, bound: distributedDpPldBound(r.calibration)! }));
  const mu = Math.sqrt(bounds.reduce((sum, r) => sum + r.count / r.bound.noiseMultiplier ** 2, 0));
  const ratio = bounds.reduce((sum, r) => sum + r.count * r.bound.logRatio, 0);
  const moved = bounds.reduce((sum, r) => sum + r.count * r.bound.totalVariation, 0);
  const gaussianDelta = (e: number) => Math.exp(logPhi(-e / mu + mu / 2)) - Math.exp(e + logPhi(-e / mu - mu / 2));
  const spent = (e: number) => Math.exp(ratio) * gaussianDelta(e - 2 * ratio) + (1 + Math.exp(e)) * moved;
  // Up to 30: far beyond these runs' epsilon, and below where e^eps T alone would pass delta.
  let [low, high] = [2 * ratio, 30];
  for (let i = 0; i < 200; i++) {
    const mid = (low + high) / 2;
    if (spent(mid) > delta) low = mid;
    else high = mid;
  }
  return high;
}

describe("per-client evaluation in a distributed-dp run", () => {
  test("fedtensor run fedavg-mnist --aggregator distributed-dp --client-holdout 0.2 --personalize-epochs 1: its epsilon composes the histograms' releases, and no per-client file is written", async () => {
    const out = tempDir("ft-ddp-eval-");
    const { status, output } = await inProcessCli(["run", "fedavg-mnist", ...options, "--out", out]);
    expect(status, output).toBe(0);
    const config = await loadRunConfig(["examples/fedavg-mnist.json", ...options, "--out", out]);
    // Each row: its rounds and the evaluations by then; the last line adds personalization's release.
    const rows = readMetrics(join(out, "metrics.jsonl")) as unknown as { epsilon: number; client_accuracy_mean: number | null; clients_evaluated: number }[];
    expect(rows).toHaveLength(2);
    for (const [i, row] of rows.entries()) {
      const expected = composedEpsilon([{ calibration: rounds, count: i + 1 }, { calibration: evaluation, count: i + 1 }]);
      expect(row.epsilon).toBeCloseTo(expected, 6);
      expect(row.epsilon).toBe(distributedDpEpsilonAfter(config, i + 1, 7850));
      expect(row.epsilon).toBeGreaterThan(distributedDpEpsilonAfter({ ...config, clientHoldout: 0 }, i + 1, 7850) + 0.1);
      expect(row.client_accuracy_mean).toEqual(expect.any(Number));
    }
    const final = composedEpsilon([{ calibration: rounds, count: 2 }, { calibration: evaluation, count: 2 }, { calibration: personalization, count: 1 }]);
    expect(distributedDpEpsilonAfter(config, 2, 7850, true)).toBeCloseTo(final, 6);
    expect(final).toBeGreaterThan(rows[1]!.epsilon);
    expect(output).toContain(`at epsilon ${final.toFixed(2)} (delta 0.00001)`);
    // No per-client file: the folder holds the run's aggregate files and the released histograms only.
    const files = readdirSync(out);
    for (const perClient of [evaluationFiles.clientMetrics, evaluationFiles.clientConfusion, evaluationFiles.personalization]) expect(files).not.toContain(perClient);
    const summary = JSON.parse(readFileSync(join(out, evaluationFiles.personalizationSummary), "utf8")) as { released: string; noiseMultiplier: number; before: { histogram: number[] } };
    expect(summary.released).toMatch(/^distributed-DP histograms/);
    expect(summary.noiseMultiplier).toBe(5);
    expect(summary.before.histogram).toHaveLength(accuracyBins);
    // Noised: the released counts are not the whole numbers an exact histogram has.
    expect(summary.before.histogram.some((n) => !Number.isInteger(n))).toBe(true);
  }, deadline(120_000));

  test("--accountant rdp composes the releases order by order", async () => {
    const config = await loadRunConfig(["examples/fedavg-mnist.json", ...options, "--accountant", "rdp", "--out", "unused"]);
    const releases = [{ calibration: rounds, count: 2 }, { calibration: evaluation, count: 2 }, { calibration: personalization, count: 1 }];
    expect(distributedDpEpsilonAfter(config, 2, 7850, true)).toBe(distributedDpComposedEpsilon(releases, delta).epsilon);
    expect(distributedDpEpsilonAfter(config, 2, 7850, true)).toBeGreaterThan(distributedDpEpsilonAfter({ ...config, clientHoldout: 0 }, 2, 7850, true));
    // Without the sampler's error the composition is the sum of the releases' RDP at each order, converted once.
    const exactSampler = { relativeError: 0, totalVariation: 0 };
    const perRelease = releases.map((r) => distributedDpRoundRdp(r.calibration));
    const summed = DEFAULT_RDP_ORDERS.map((_, i) => releases.reduce((sum, r, j) => sum + r.count * perRelease[j]![i]!, 0));
    expect(distributedDpComposedEpsilon(releases, delta, exactSampler).epsilon).toBe(rdpToEpsilon(DEFAULT_RDP_ORDERS, summed, delta).epsilon);
  });

  test("--ddp-target-epsilon calibrates the rounds' noise with the histograms' releases counted", async () => {
    for (const accountant of ["pld", "rdp"]) {
      const config = await loadRunConfig(["examples/fedavg-mnist.json", ...options, "--ddp-target-epsilon", "8", "--accountant", accountant, "--out", "unused"]);
      const spent = distributedDpEpsilonAfter(config, 2, 7850, true);
      expect(spent).toBeLessThanOrEqual(8);
      expect(spent).toBeGreaterThan(7.99);
      // The releases take their share of the target: the rounds get more noise than without them.
      expect(distributedDpOptionsOf(config, 7850).noiseMultiplier).toBeGreaterThan(distributedDpOptionsOf({ ...config, clientHoldout: 0 }, 7850).noiseMultiplier * 1.01);
    }
  });
});
