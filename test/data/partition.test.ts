import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readIdxFile } from "../../src/lib/data/idx.js";
import { mnistDataDir } from "../../src/lib/data/mnist.js";
import {
  labelCounts,
  partitionDirichlet,
  partitionIid,
  partitionShards,
  type Partition,
} from "../../src/lib/data/partition.js";
import { Rng } from "../../src/lib/random.js";
import { expectFtError, totalVariation } from "./helpers.js";

// The labels alone: partitions never look at the images.
const labels = new Int32Array(readIdxFile(join(mnistDataDir(), "train-labels-idx1-ubyte"), "").data);
const everyIndex = Int32Array.from({ length: labels.length }, (_, i) => i);
const globalCounts = labelCounts(labels, everyIndex, 10);

/** Each example in exactly one client, and each client's indices ascending. */
function expectExactCover(partition: Partition, numExamples: number): void {
  const seen = new Uint8Array(numExamples);
  let ascending = true;
  for (const indices of partition) {
    for (let i = 0; i < indices.length; i++) {
      if (i > 0 && indices[i]! <= indices[i - 1]!) ascending = false;
      seen[indices[i]!]! += 1;
    }
  }
  expect(ascending).toBe(true);
  expect(seen.every((times) => times === 1)).toBe(true);
}

/** Element-wise equality of two partitions (faster than a deep toEqual on 60,000 indices). */
function samePartition(a: Partition, b: Partition): boolean {
  const bytes = (indices: Int32Array) => Buffer.from(indices.buffer, indices.byteOffset, indices.byteLength);
  return a.length === b.length && a.every((indices, client) => bytes(indices).equals(bytes(b[client]!)));
}

/** The mean total variation distance between each client's label mix and the whole set's. */
function meanLabelSkew(partition: Partition): number {
  const distances = partition.map((indices) => totalVariation(labelCounts(labels, indices, 10), globalCounts));
  return distances.reduce((s, d) => s + d, 0) / distances.length;
}

const FEDAVG_SHARDS = { numShards: 200, shardsPerClient: 2 };

const distinctLabels = (indices: Int32Array) => labelCounts(labels, indices, 10).filter((c) => c > 0).length;

describe("IID partition", () => {
  const partition = partitionIid(labels.length, 100, Rng.fromSeed(1));

  it("splits MNIST train into 100 clients of 600 covering every example once", () => {
    expect(partition).toHaveLength(100);
    expect(partition.every((indices) => indices.length === 600)).toBe(true);
    expectExactCover(partition, labels.length);
  });

  it("gives every client a label mix close to the whole set's", () => {
    expect(partition.every((indices) => distinctLabels(indices) === 10)).toBe(true);
    expect(meanLabelSkew(partition)).toBeLessThan(0.07);
  });

  it("makes sizes differ by at most one when the split is uneven", () => {
    expect(partitionIid(10, 4, Rng.fromSeed(1)).map((p) => p.length)).toEqual([2, 3, 2, 3]);
  });

  it("is reproducible from its seed", () => {
    expect(samePartition(partitionIid(labels.length, 100, Rng.fromSeed(1)), partition)).toBe(true);
    expect(samePartition(partitionIid(labels.length, 100, Rng.fromSeed(2)), partition)).toBe(false);
  });
});

describe("FedAvg label shards", () => {
  const partition = partitionShards(labels, FEDAVG_SHARDS, Rng.fromSeed(1));

  it("deals 200 shards of 300 into 100 clients of 600 covering every example once", () => {
    expect(partition).toHaveLength(100);
    expect(partition.every((indices) => indices.length === 600)).toBe(true);
    expectExactCover(partition, labels.length);
  });

  it("gives most clients at most two labels", () => {
    const labelsPerClient = partition.map(distinctLabels);
    // Only shards that straddle one of the 9 label boundaries hold two labels, so at most 9
    // clients can have more than two.
    expect(labelsPerClient.filter((n) => n <= 2).length).toBeGreaterThanOrEqual(91);
    expect(Math.max(...labelsPerClient)).toBeLessThanOrEqual(4);
    expect(meanLabelSkew(partition)).toBeGreaterThan(0.7);
  });

  it("gives each client two whole shards of the label-sorted order", () => {
    const sortedByLabel = Array.from(everyIndex).sort((a, b) => labels[a]! - labels[b]! || a - b);
    const shardOf = new Int32Array(labels.length);
    sortedByLabel.forEach((example, position) => (shardOf[example] = Math.floor(position / 300)));
    const dealt = new Set<number>();
    for (const indices of partition) {
      const shardSizes = new Map<number, number>();
      for (const example of indices) shardSizes.set(shardOf[example]!, (shardSizes.get(shardOf[example]!) ?? 0) + 1);
      expect([...shardSizes.values()]).toEqual([300, 300]);
      for (const shard of shardSizes.keys()) dealt.add(shard);
    }
    expect(dealt.size).toBe(200);
  });

  it("is reproducible from its seed", () => {
    const shards = (seed: number) => partitionShards(labels, FEDAVG_SHARDS, Rng.fromSeed(seed));
    expect(samePartition(shards(1), partition)).toBe(true);
    expect(samePartition(shards(2), partition)).toBe(false);
  });

  it("rejects shard counts that do not divide evenly", () => {
    const rng = Rng.fromSeed(1);
    const odd = { numShards: 201, shardsPerClient: 2 };
    expectFtError(() => partitionShards(labels, odd, rng), "FT305", "shardsPerClient");
    expectFtError(() => partitionShards(labels.subarray(0, 10), FEDAVG_SHARDS, rng), "FT305", "200 shards of 10");
  });
});

describe("Dirichlet label skew", () => {
  const dirichlet = (alpha: number, seed = 1, minExamplesPerClient = 0) =>
    partitionDirichlet(labels, 10, { numClients: 100, alpha, minExamplesPerClient }, Rng.fromSeed(seed));

  it("covers every example once, whatever alpha", () => {
    for (const alpha of [0.05, 1, 1000]) expectExactCover(dirichlet(alpha), labels.length);
  });

  it("is skewed for small alpha and close to uniform for large alpha", () => {
    const skewed = meanLabelSkew(dirichlet(0.1));
    const uniform = meanLabelSkew(dirichlet(1000));
    expect(skewed).toBeGreaterThan(0.6);
    expect(uniform).toBeLessThan(0.03);
    expect(meanLabelSkew(dirichlet(1))).toBeGreaterThan(uniform);
    expect(meanLabelSkew(dirichlet(1))).toBeLessThan(skewed);
    // The share of a client's examples in its most common label: 1/10 would be perfectly uniform.
    const meanTopShare = (p: Partition) =>
      p.reduce((sum, indices) => sum + Math.max(...labelCounts(labels, indices, 10)) / indices.length, 0) / p.length;
    expect(meanTopShare(dirichlet(0.1))).toBeGreaterThan(0.5);
    expect(meanTopShare(dirichlet(1000))).toBeLessThan(0.15);
  });

  it("redraws until every client has the minimum size", () => {
    const partition = dirichlet(0.5, 3, 10);
    expect(Math.min(...partition.map((p) => p.length))).toBeGreaterThanOrEqual(10);
    expectFtError(() => dirichlet(0.5, 3, 601), "FT305", "exceeds the 60000 examples");
  });

  it("is reproducible from its seed", () => {
    expect(samePartition(dirichlet(0.3, 5), dirichlet(0.3, 5))).toBe(true);
    expect(samePartition(dirichlet(0.3, 5), dirichlet(0.3, 6))).toBe(false);
  });

  it("rejects bad options and labels outside the classes", () => {
    expectFtError(() => dirichlet(0), "FT305", "alpha");
    expectFtError(
      () => partitionDirichlet(labels, 5, { numClients: 10, alpha: 1 }, Rng.fromSeed(1)),
      "FT302",
      "label 9 is outside [0, 5)",
    );
  });
});
