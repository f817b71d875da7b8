/**
 * Federated evaluation in `fedtensor run`: the distribution across clients in the metrics on
 * evaluated rounds (null on the others), per-client and confusion files that add up, the same
 * numbers whether the clients' held-out data streams in chunks of 3 or comes whole, top-k and
 * personalization evaluation, and the option checks.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/index.js";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { federate } from "../../src/lib/data/federated.js";
import { holdOutPerClient } from "../../src/lib/data/holdout.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { FederatedEvaluator } from "../../src/lib/run/federated-eval.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { Rng } from "../../src/lib/random.js";
import * as tf from "@tensorflow/tfjs";
import { tiny } from "../lib/helpers.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

/** Logistic regression on 20 MNIST clients with a fifth of each held out; 3 rounds, evaluated after rounds 2 and 3. */
const config = (prefix: string, settings: Record<string, unknown> = {}) =>
  validateRunConfig({ model: "logistic", clients: 20, clientsPerRound: 4, batchSize: 50, rounds: 3, evalEvery: 2, clientHoldout: 0.2, out: tempDir(prefix), ...settings }, "test");

const csvRows = (path: string) =>
  readFileSync(path, "utf8")
    .trim()
    .split("\r\n")
    .map((line) => line.split(","));
const quiet = { write: () => true, isTTY: false };

describe("a run with --client-holdout", () => {
  test("reports the clients' distribution beside central evaluation, with files that add up", async () => {
    const lines: string[] = [];
    const c = config("fedeval-run-", { topK: 3, personalizeEpochs: 1 });
    const result = await train(c, { write: (s: string) => lines.push(s), isTTY: false });
    const rows = readMetrics(join(c.out, "metrics.jsonl"));
    expect(rows.map((r) => r.client_accuracy_mean)).toEqual([null, expect.any(Number), expect.any(Number)]);
    const last = rows[2]!;
    // 20 clients of 3000 MNIST examples each hold out 600.
    expect(last.clients_evaluated).toBe(20);
    for (const key of ["client_accuracy_p10", "client_accuracy_p50", "client_accuracy_p90", "client_top3_accuracy_mean", "test_top3_accuracy"]) expect(last[key]).toEqual(expect.any(Number));
    expect(last.client_accuracy_p10 as number).toBeLessThanOrEqual(last.client_accuracy_p50 as number);
    expect(last.client_accuracy_p50 as number).toBeLessThanOrEqual(last.client_accuracy_p90 as number);
    expect(last.client_top3_accuracy_mean as number).toBeGreaterThanOrEqual(last.client_accuracy_mean as number);
    expect(last.test_top3_accuracy as number).toBeGreaterThan(last.test_accuracy as number);
    // Every client holds out 600: weighted and unweighted means agree.
    expect(last.client_accuracy_weighted as number).toBeCloseTo(last.client_accuracy_mean as number, 6);

    const perClient = csvRows(join(c.out, "client-metrics.csv"));
    expect(perClient[0]).toEqual(["client", "held_out_examples", "accuracy", "top3_accuracy", "loss"]);
    expect(perClient.slice(1).map((r) => Number(r[1]))).toEqual(Array(20).fill(600));
    const mean = perClient.slice(1).reduce((s, r) => s + Number(r[2]), 0) / 20;
    expect(mean).toBeCloseTo(last.client_accuracy_mean as number, 6);

    // The test set's confusion matrix: 10000 examples, its diagonal the test accuracy.
    const confusion = csvRows(join(c.out, "confusion.csv")).slice(1).map((r) => r.slice(1).map(Number));
    const total = confusion.flat().reduce((a, b) => a + b, 0);
    expect(total).toBe(10000);
    expect(confusion.reduce((s, row, i) => s + row[i]!, 0) / total).toBeCloseTo(last.test_accuracy as number, 6);
    const clientConfusion = csvRows(join(c.out, "client-confusion.csv")).slice(1).map((r) => r.slice(1).map(Number));
    expect(clientConfusion.flat().reduce((a, b) => a + b, 0)).toBe(20 * 600);
    expect(clientConfusion.reduce((s, row, i) => s + row[i]!, 0) / 12000).toBeCloseTo(last.client_accuracy_weighted as number, 6);

    // Personalization: "before" is the last federated evaluation; one epoch moved every client.
    const summary = JSON.parse(readFileSync(join(c.out, "personalization.json"), "utf8"));
    expect(summary.before.accuracy.mean).toBeCloseTo(last.client_accuracy_mean as number, 6);
    expect(summary.after.accuracy.mean).not.toBeCloseTo(summary.before.accuracy.mean, 6);
    expect(result.personalization?.after.clients).toBe(20);
    expect(csvRows(join(c.out, "personalization.csv"))).toHaveLength(21);
    const text = lines.join("");
    expect(text).toMatch(/round 3\/3 {2}loss [\d.]+ {2}acc [\d.]+% {2}client acc [\d.]+% \(p10 [\d.]+%\)/);
    expect(text).toMatch(/personalization \(1 local epoch, 20 clients\): held-out accuracy before mean [\d.]+%, p10/);
    expect(readFileSync(join(c.out, "plot.svg"), "utf8")).toContain("Client held-out accuracy");
  }, deadline(120_000));

  test("held-out data streamed in chunks of 3 gives the numbers of one whole chunk; --eval-clients samples", async () => {
    const whole = config("fedeval-whole-", { rounds: 2 });
    const chunked = config("fedeval-chunks-", { rounds: 2, chunkClients: 3 });
    const sampled = config("fedeval-sampled-", { rounds: 2, evalClients: 5 });
    for (const c of [whole, chunked, sampled]) await train(c, quiet);
    const client = (c: typeof whole) => readMetrics(join(c.out, "metrics.jsonl"))[1]!;
    for (const [key, value] of Object.entries(client(whole))) {
      if (key.startsWith("client_")) expect(client(chunked)[key], key).toBeCloseTo(value as number, 5);
    }
    expect(client(sampled).clients_evaluated).toBe(5);
    expect(csvRows(join(sampled.out, "client-metrics.csv"))).toHaveLength(6);
  }, deadline(120_000));
});

describe("resuming a run with --client-holdout", () => {
  test("gives the rows of the uninterrupted run: the same split, the same clients' numbers", async () => {
    const whole = config("fedeval-resume-whole-", { evalEvery: 1, checkpointEvery: 1 });
    await train(whole, quiet);
    const part = config("fedeval-resume-part-", { evalEvery: 1, checkpointEvery: 1, rounds: 2 });
    await train(part, quiet);
    await train({ ...part, rounds: 3, resume: true }, quiet, { given: ["rounds", "resume", "out"] });
    const rows = (c: typeof whole) => readMetrics(join(c.out, "metrics.jsonl")).map(({ seconds: _seconds, ...row }) => row);
    expect(rows(part)).toEqual(rows(whole));
    expect(rows(part)[2]!.client_accuracy_p10).toEqual(expect.any(Number));
  }, deadline(120_000));
});

describe("the options", () => {
  test("federated and personalization evaluation without --client-holdout, and top-k beyond the classes, are FT305", () => {
    expect(() => config("x-", { clientHoldout: 0, personalizeEpochs: 1 })).toThrow(/^FT305: personalizeEpochs \(in test\): .*give --client-holdout a share above 0/);
    expect(() => config("x-", { clientHoldout: 0, evalClients: 4 })).toThrow(/^FT305: evalClients/);
    expect(() => config("x-", { topK: 11 })).toThrow(/FT305: .*top-11 accuracy needs at least 11 classes; model logistic has 10/);
    expect(() => config("x-", { clientHoldout: 1 })).toThrow(/^FT305: clientHoldout/);
  });

  test("clients that all hold nothing out are FT325", async () => {
    // Four clients of one example each: each keeps its example to train on.
    const set = labelledDataset("train", { x: new Float32Array(8), y: Int32Array.of(0, 1, 0, 1), featureShape: [2], numClasses: 2 });
    const data = holdOutPerClient(federate(set, set, [0, 1, 2, 3].map((i) => Int32Array.of(i))), 0.5, Rng.fromSeed(0));
    const run = validateRunConfig({ clientHoldout: 0.5 }, "test");
    const evaluator = new FederatedEvaluator(tiny, data, run, [2], Rng.fromSeed(0));
    const params = { w: tf.zeros([2, 2]), b: tf.zeros([2]) };
    const error = await evaluator.evaluate(params, 1).then(() => undefined, (e: unknown) => e);
    tf.dispose(Object.values(params));
    expect(error).toBeInstanceOf(FedTensorError);
    expect((error as Error).message).toBe(
      "FT325: federated evaluation after round 1: of the 4 clients evaluated, none of them holds an example out (a client of one example keeps it to train on); raise --client-holdout or evaluate more clients",
    );
  });
});
