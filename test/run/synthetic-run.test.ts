/**
 * `fedtensor run --dataset synthetic` (FedProx's Synthetic(alpha, beta), logistic regression on
 * its 60 features) and `--partition quantity`: a DP run on the synthetic non-IID set trains and
 * reports its epsilon; the options are checked.
 */
import { describe, expect, test } from "vitest";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { dataFields, federatedData, federatedDataKey } from "../../src/lib/run/setup.js";
import { train } from "../../src/lib/run/train.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "./temp-dir.js";

const quiet = { write: () => true, isTTY: false };

describe("the FL papers' data sets in fedtensor run", () => {
  test("a DP-FedAvg run on Synthetic(1, 1) trains logistic regression and reports epsilon", { timeout: deadline(180_000) }, async () => {
    const out = tempDir("ft-synthetic-");
    const config = validateRunConfig(
      { dataset: "synthetic", model: "logistic", clients: 30, clientsPerRound: 10, rounds: 4, aggregator: "dp", dpClip: 1, dpNoise: 1, lr: 0.05, checkpointEvery: 0, out },
      "test",
    );
    await train(config, quiet);
    const rows = readMetrics(`${out}/metrics.jsonl`);
    expect(rows).toHaveLength(4);
    const epsilons = rows.map((row) => Number(row.epsilon));
    expect(epsilons.every((e) => Number.isFinite(e) && e > 0)).toBe(true);
    expect(epsilons[3]!).toBeGreaterThan(epsilons[0]!);
    expect(Number(rows[3]!.test_accuracy)).toBeGreaterThan(0);
  });

  test("the data set follows its options: alpha and beta, the seed, one client per --clients", async () => {
    const data = (alpha: number, seed = 0) => federatedData(validateRunConfig({ dataset: "synthetic", model: "logistic", clients: 12, syntheticAlpha: alpha, syntheticBeta: alpha, seed }, "test"));
    expect(data(1).clientIds).toHaveLength(12);
    expect(data(1).train.featureShape).toEqual([60]);
    expect(Buffer.from(data(1).train.x.buffer).equals(Buffer.from(data(1).train.x.buffer))).toBe(true);
    expect(Buffer.from(data(0).train.x.buffer).equals(Buffer.from(data(1).train.x.buffer))).toBe(false);
  });

  test("an engine worker's data key holds every config field federatedData reads (a worker reusing data across runs)", () => {
    for (const given of [
      { dataset: "synthetic", model: "logistic", clients: 12, syntheticAlpha: 0.5, syntheticBeta: 2, clientHoldout: 0.2 },
      { dataset: "sotu", model: "lstm", clients: 5, clientHoldout: 0.1 },
    ]) {
      const config = validateRunConfig(given, "test");
      const read = new Set<string>();
      federatedData(new Proxy(config, { get: (target, field, receiver) => (typeof field === "string" && read.add(field), Reflect.get(target, field, receiver)) }));
      expect([...read].filter((field) => !(dataFields as readonly string[]).includes(field))).toEqual([]);
      for (const field of read) expect(federatedDataKey({ ...config, [field]: `another ${field}` } as never)).not.toBe(federatedDataKey(config));
    }
  });

  test("--partition quantity splits MNIST into clients of Dirichlet(alpha) sizes", () => {
    const sizes = federatedData(validateRunConfig({ partition: "quantity", alpha: 0.3, clients: 50 }, "test")).clientIndices.map((c) => c.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(60_000);
    expect(Math.max(...sizes) / Math.min(...sizes)).toBeGreaterThan(20);
  });

  test("bad combinations are FT305", async () => {
    await expect(loadRunConfig(["--dataset", "synthetic", "--model", "2nn"])).rejects.toThrow(/FT305: .*60 features go with logistic/);
    await expect(loadRunConfig(["--synthetic-alpha", "1"])).rejects.toThrow(/FT305: --synthetic-alpha: applies only with --dataset synthetic/);
    await expect(loadRunConfig(["--dataset", "synthetic", "--model", "logistic", "--synthetic-beta", "-1"])).rejects.toThrow(/FT305: --synthetic-beta/);
    expect(() => federatedData(validateRunConfig({ dataset: "synthetic", model: "logistic", partition: "shards" }, "test"))).toThrow(/FT305: .*synthetic's clients are its own/);
  });
});
