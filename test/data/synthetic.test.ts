/**
 * FedProx's Synthetic(alpha, beta) and quantity skew, held to the statistics that define them:
 * client sizes that follow the paper's power law (log(n - 50) ~ N(4, 2)), label distributions
 * that move away from the pooled one as alpha and beta grow (and match it for Synthetic-IID),
 * and for quantity skew, sizes whose spread grows as alpha shrinks while labels stay IID.
 */
import { describe, expect, it } from "vitest";
import { labelCounts, partitionQuantity, syntheticClientSize, syntheticFedProx, type FederatedDataset } from "../../src/lib/data/index.js";
import { Rng } from "../../src/lib/random.js";

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const std = (values: readonly number[]) => Math.sqrt(mean(values.map((v) => (v - mean(values)) ** 2)));

/** Each client's label distribution's total variation distance from the pooled one, averaged over clients. */
function meanLabelDistance(data: FederatedDataset): number {
  const { y, numClasses } = data.train;
  const all = labelCounts(y, Int32Array.from(data.clientIndices.flatMap((indices) => Array.from(indices))), numClasses);
  const total = all.reduce((a, b) => a + b, 0);
  return mean(
    data.clientIndices.map((indices) => {
      const counts = labelCounts(y, indices, numClasses);
      return 0.5 * Array.from(counts).reduce((sum, c, k) => sum + Math.abs(c / indices.length - all[k]! / total), 0);
    }),
  );
}

/** The number of classes that hold at least 5% of a client's examples, averaged over clients. */
const meanClassesPerClient = (data: FederatedDataset) =>
  mean(data.clientIndices.map((indices) => Array.from(labelCounts(data.train.y, indices, data.train.numClasses)).filter((c) => c >= 0.05 * indices.length).length));

describe("Synthetic(alpha, beta) (Li et al. 2020)", () => {
  it("draws client sizes from the paper's power law: floor(lognormal(4, 2)) + 50", () => {
    const rng = Rng.fromSeed(7);
    const sizes = Array.from({ length: 4000 }, () => syntheticClientSize(rng));
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(50);
    const logs = sizes.map((n) => Math.log(n - 50 + 0.5));
    expect(mean(logs)).toBeCloseTo(4, 1);
    expect(Math.abs(std(logs) - 2)).toBeLessThan(0.1);
    // Heavy-tailed: the largest client dwarfs the median one.
    const sorted = [...sizes].sort((a, b) => a - b);
    expect(sorted.at(-1)! / sorted[2000]!).toBeGreaterThan(100);
  });

  it("has the paper's shape: 30 clients, 60 features, 10 classes, 80/20 split per client", () => {
    const data = syntheticFedProx({ alpha: 1, beta: 1 }, Rng.fromSeed(1));
    expect(data.clientIds).toHaveLength(30);
    expect(data.clientIds[0]).toBe("synthetic-000");
    expect(data.train.featureShape).toEqual([60]);
    expect(data.train.numClasses).toBe(10);
    const trained = data.clientIndices.reduce((a, indices) => a + indices.length, 0);
    expect(data.test.y.length + trained).toBe(data.train.y.length);
    expect(data.test.y.length / data.train.y.length).toBeCloseTo(0.2, 1);
    // The same seed gives the same data.
    const again = syntheticFedProx({ alpha: 1, beta: 1 }, Rng.fromSeed(1));
    expect(Buffer.from(again.train.x.buffer).equals(Buffer.from(data.train.x.buffer))).toBe(true);
  });

  it("moves each client's labels away from the pooled distribution as alpha and beta grow", () => {
    const distance = (alpha: number, beta: number, iid = false) =>
      mean([1, 2, 3].map((seed) => meanLabelDistance(syntheticFedProx({ alpha, beta, iid }, Rng.fromSeed(seed)))));
    const iid = distance(0, 0, true);
    const none = distance(0, 0);
    const half = distance(0.5, 0.5);
    const one = distance(1, 1);
    expect(iid).toBeLessThan(0.15);
    expect(none).toBeGreaterThan(iid);
    expect(half).toBeGreaterThan(none);
    expect(one).toBeGreaterThan(half);
    expect(one).toBeGreaterThan(0.4);
  });

  it("gives Synthetic(1, 1) clients few classes each, and Synthetic-IID clients most of them", () => {
    const skewed = mean([1, 2, 3].map((seed) => meanClassesPerClient(syntheticFedProx({ alpha: 1, beta: 1 }, Rng.fromSeed(seed)))));
    const iid = mean([1, 2, 3].map((seed) => meanClassesPerClient(syntheticFedProx({ alpha: 0, beta: 0, iid: true }, Rng.fromSeed(seed)))));
    expect(skewed).toBeLessThan(4);
    expect(iid).toBeGreaterThan(skewed + 2);
  });

  it("refuses options out of range with FT305", () => {
    expect(() => syntheticFedProx({ alpha: -1, beta: 0 }, Rng.fromSeed(0))).toThrow(/FT305: .*alpha/);
    expect(() => syntheticFedProx({ alpha: 0, beta: 0, clients: 0 }, Rng.fromSeed(0))).toThrow(/FT305: .*clients/);
    expect(() => syntheticFedProx({ alpha: 0, beta: 0, testFraction: 1 }, Rng.fromSeed(0))).toThrow(/FT305: .*testFraction/);
  });
});

describe("quantity skew (Li et al. 2022)", () => {
  const labels = Int32Array.from({ length: 20_000 }, (_, i) => i % 10);
  const cv = (alpha: number) => {
    const sizes = partitionQuantity(labels.length, { numClients: 100, alpha }, Rng.fromSeed(3)).map((part) => part.length);
    return std(sizes) / mean(sizes);
  };

  it("covers every example once, each client at least the minimum", () => {
    const parts = partitionQuantity(labels.length, { numClients: 100, alpha: 0.1, minExamplesPerClient: 5 }, Rng.fromSeed(1));
    expect(Math.min(...parts.map((p) => p.length))).toBeGreaterThanOrEqual(5);
    const seen = Int32Array.from(parts.flatMap((p) => Array.from(p))).sort();
    expect(Array.from(seen)).toEqual(Array.from({ length: labels.length }, (_, i) => i));
  });

  it("spreads the sizes more as alpha shrinks: Dirichlet(alpha)'s coefficient of variation, sqrt((N - 1) / (N alpha + 1))", () => {
    for (const alpha of [0.1, 1, 10]) {
      const expected = Math.sqrt(99 / (100 * alpha + 1));
      expect(Math.abs(cv(alpha) - expected) / expected).toBeLessThan(0.35);
    }
    expect(cv(0.1)).toBeGreaterThan(cv(1));
    expect(cv(1)).toBeGreaterThan(cv(10));
  });

  it("keeps each large client's labels close to the data set's", () => {
    const parts = partitionQuantity(labels.length, { numClients: 20, alpha: 1 }, Rng.fromSeed(4));
    for (const part of parts.filter((p) => p.length >= 500)) {
      const counts = labelCounts(labels, part, 10);
      for (const c of counts) expect(Math.abs(c / part.length - 0.1)).toBeLessThan(0.05);
    }
  });

  it("refuses more clients than examples allow, with FT305", () => {
    expect(() => partitionQuantity(10, { numClients: 20, alpha: 1 }, Rng.fromSeed(0))).toThrow(/FT305/);
  });
});
