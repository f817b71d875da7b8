/**
 * Per-client evaluation in a dp run (src/lib/run/private-eval.ts): with --client-holdout and
 * --personalize-epochs, the clients' accuracies stay on the clients; the server learns DP
 * histograms of them, whose cost the run's epsilon includes, and no per-client file is written.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { accuracyBins, privateEvaluationProgram } from "../../src/lib/algorithms/private-evaluation.js";
import { logistic } from "../../src/lib/models/dense.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { evaluationFiles } from "../../src/lib/run/evaluation-files.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { histogramEstimate } from "../../src/lib/run/private-eval.js";
import { epsilonAfter } from "../../src/lib/run/privacy.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const quiet = { write: () => true, isTTY: false };

describe("a dp run's per-client evaluation", () => {
  test("releases DP histograms priced in its epsilon, and writes no per-client file", async () => {
    const config = validateRunConfig(
      { model: "logistic", dataset: "synthetic", clients: 8, clientsPerRound: 3, batchSize: 50, rounds: 1, aggregator: "clip,dp", dpNoise: 1, clientHoldout: 0.2, personalizeEpochs: 1, out: tempDir("ft-private-eval-") },
      "test",
    );
    const result = await train(config, quiet);
    const parameters = 60 * 10 + 10;
    // The evaluation and personalization are in the run's epsilon: more than the rounds alone spend.
    expect(result.epsilon).toBe(epsilonAfter(config, 1, parameters, true));
    expect(result.epsilon!).toBeGreaterThan(epsilonAfter({ ...config, clientHoldout: 0 }, 1, parameters) + 0.1);
    const files = readdirSync(config.out);
    for (const perClient of [evaluationFiles.clientMetrics, evaluationFiles.clientConfusion, evaluationFiles.personalization]) expect(files).not.toContain(perClient);
    const summary = JSON.parse(readFileSync(join(config.out, evaluationFiles.personalizationSummary), "utf8")) as { before: { histogram: number[] }; after: { histogram: number[] }; noiseMultiplier: number };
    expect(summary.before.histogram).toHaveLength(accuracyBins);
    expect(summary.after.histogram).toHaveLength(accuracyBins);
    expect(summary.noiseMultiplier).toBe(5);
    const rows = readMetrics(join(config.out, "metrics.jsonl"));
    const last = rows.at(-1)! as Record<string, unknown>;
    expect(last.client_accuracy_mean).toEqual(expect.any(Number));
    expect(last.client_accuracy_weighted).toBeNull();
    expect(last.client_loss_mean).toBeNull();
    expect(last.epsilon).toBe(epsilonAfter(config, 1, parameters));
    expect(existsSync(join(config.out, "secret.key"))).toBe(true);
  }, deadline(60_000));

  test("a secure run releases exact histograms through secure sums, and no epsilon", async () => {
    const config = validateRunConfig(
      { model: "logistic", dataset: "synthetic", clients: 8, clientsPerRound: 3, batchSize: 50, rounds: 1, aggregator: "secure", clientHoldout: 0.2, out: tempDir("ft-secure-eval-") },
      "test",
    );
    const result = await train(config, quiet);
    expect(result.epsilon).toBeUndefined();
    const files = readdirSync(config.out);
    for (const perClient of [evaluationFiles.clientMetrics, evaluationFiles.clientConfusion]) expect(files).not.toContain(perClient);
    // Exact counts: every one of the 8 clients (all hold examples out) in one bin, so the mean is an average of bin centres.
    const last = readMetrics(join(config.out, "metrics.jsonl")).at(-1)! as Record<string, number>;
    expect(last.clients_evaluated).toBe(8);
    const centres = 8 * 10 * last.client_accuracy_mean!;
    expect(Math.abs(centres - 0.5 * 8 - Math.round(centres - 0.5 * 8))).toBeLessThan(1e-6);
  }, deadline(60_000));

  test("the evaluation program's only output is its release: a dpSum of one-hot bins, clip 1", () => {
    const program = privateEvaluationProgram(logistic);
    expect(program.signature.endsWith("-> <histogram=f32[10]>@SERVER)")).toBe(true);
    expect(program.signature).toContain("x={f32[T,B,784]}@CLIENTS(private)");
    expect(program.privacy).toHaveLength(1);
    expect(program.privacy[0]).toMatch(/^dpSum #0: Gaussian mechanism, clip 1, noise multiplier input noiseMultiplier .*called once$/);
  });

  test("reads the clients' count, mean and percentiles off a histogram, negative noise taken as 0", () => {
    const e = histogramEstimate([0, 0, 0, 0, 0, 2, 0, 0, 2, -0.5]);
    expect(e.clients).toBe(4);
    expect(e.mean).toBeCloseTo((2 * 0.55 + 2 * 0.85) / 4, 10);
    expect(e.p50).toBeCloseTo(0.6, 10);
    expect(e.p90).toBeCloseTo(0.8 + 0.1 * 0.8, 10);
  });
});
