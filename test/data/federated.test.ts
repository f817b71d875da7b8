import { describe, expect, it } from "vitest";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import {
  batchCohort,
  batchEvaluation,
  federate,
  roundCohort,
  sampleCohort,
  type CohortBatches,
} from "../../src/lib/data/federated.js";
import { loadMnist } from "../../src/lib/data/mnist.js";
import { partitionShards } from "../../src/lib/data/partition.js";
import { Rng } from "../../src/lib/random.js";
import { expectFtError } from "./helpers.js";

/** 10 examples of 2 features: example i is [10 i, 10 i + 1] with label i % 3, so a slot's x names its example. */
const train = labelledDataset("toy train", {
  x: Float32Array.from({ length: 20 }, (_, k) => 10 * Math.floor(k / 2) + (k % 2)),
  y: Int32Array.from({ length: 10 }, (_, i) => i % 3),
  featureShape: [2],
  numClasses: 3,
});
const toy = federate(train, train, [Int32Array.of(0, 1, 2, 3, 4), Int32Array.of(5, 6), Int32Array.of(7)]);

/** Per client, the example in each slot (-1 for padding), read back from x and checked against y and mask. */
function slotExamples(batches: CohortBatches): number[][] {
  const [clients, nBatches, batchSize] = batches.x.shape as [number, number, number];
  return Array.from({ length: clients }, (_, c) =>
    Array.from({ length: nBatches * batchSize }, (_, s) => {
      const slot = c * nBatches * batchSize + s;
      const [first, second] = [batches.x.data[2 * slot]!, batches.x.data[2 * slot + 1]!];
      if (batches.mask.data[slot] === 0) {
        expect([first, second, batches.y.data[slot]]).toEqual([0, 0, 0]);
        return -1;
      }
      const example = first / 10;
      expect([second, batches.y.data[slot]]).toEqual([first + 1, example % 3]);
      return example;
    }),
  );
}

describe("cohort batches", () => {
  it("pads every client to the largest one's batches and counts real examples", () => {
    const batches = batchCohort(toy, [0, 1, 2], { batchSize: 2, rng: Rng.fromSeed(1) });
    expect(batches.x.shape).toEqual([3, 3, 2, 2]);
    expect(batches.y.shape).toEqual([3, 3, 2]);
    expect(batches.mask.shape).toEqual([3, 3, 2]);
    expect(batches.count).toEqual({ shape: [3], data: Float32Array.of(5, 2, 1) });
    expect(Array.from(batches.clients)).toEqual([0, 1, 2]);
    const slots = slotExamples(batches);
    expect(slots[0]!.slice(0, 5).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(slots[0]!.slice(5)).toEqual([-1]);
    expect(slots[1]!.slice(0, 2).sort()).toEqual([5, 6]);
    expect(slots[1]!.slice(2)).toEqual([-1, -1, -1, -1]);
    expect(slots[2]).toEqual([7, -1, -1, -1, -1, -1]);
  });

  it("reshuffles each client's examples once per local epoch and concatenates them", () => {
    const batches = batchCohort(toy, [0, 1], { batchSize: 4, epochs: 3, rng: Rng.fromSeed(2) });
    expect(batches.x.shape).toEqual([2, 4, 4, 2]); // ceil(3 x 5 / 4) batches
    expect(Array.from(batches.count.data)).toEqual([5, 2]);
    const [first, second] = slotExamples(batches) as [number[], number[]];
    for (let epoch = 0; epoch < 3; epoch++) {
      expect(first.slice(5 * epoch, 5 * epoch + 5).sort()).toEqual([0, 1, 2, 3, 4]);
    }
    expect(first.slice(15)).toEqual([-1]);
    expect(second.slice(0, 6).sort()).toEqual([5, 5, 5, 6, 6, 6]);
    const epochOrders = new Set([0, 1, 2].map((epoch) => first.slice(5 * epoch, 5 * epoch + 5).join()));
    expect(epochOrders.size).toBeGreaterThan(1);
  });

  it("is reproducible, differs across seeds, and does not depend on the rest of the cohort", () => {
    const shuffled = (seed: number, cohort: number[]) =>
      slotExamples(batchCohort(toy, cohort, { batchSize: 5, epochs: 4, rng: Rng.fromSeed(seed) }))[0];
    expect(shuffled(3, [0, 1])).toEqual(shuffled(3, [0, 1]));
    expect(shuffled(3, [0, 1])).not.toEqual(shuffled(4, [0, 1]));
    expect(shuffled(3, [0])).toEqual(shuffled(3, [0, 2]));
  });

  it("copies the partition: writing into the caller's arrays, or the dataset's, after federate reads no other example", () => {
    const mine = [Int32Array.of(0, 1), Int32Array.of(2)];
    const data = federate(train, train, mine);
    mine[0]![0] = 9;
    expect(slotExamples(batchCohort(data, [0], { batchSize: 2, rng: Rng.fromSeed(1) }))[0]!.sort()).toEqual([0, 1]);
    expect(Object.isFrozen(data.clientIndices)).toBe(true);
    (data.clientIndices[1] as Int32Array)[0] = 1e6;
    expectFtError(() => batchCohort(data, [1], { batchSize: 2, rng: Rng.fromSeed(1) }), "FT302", "index 1000000 is outside the 10 examples (changed after federate?)");
  });

  it("rejects bad options and client positions", () => {
    expectFtError(() => batchCohort(toy, [0], { batchSize: 0, rng: Rng.fromSeed(1) }), "FT305", "batchSize");
    expectFtError(() => batchCohort(toy, [0], { batchSize: 2, epochs: 1.5, rng: Rng.fromSeed(1) }), "FT305", "epochs");
    expectFtError(() => batchCohort(toy, [3], { batchSize: 2, rng: Rng.fromSeed(1) }), "FT305", "client position 3");
    expectFtError(() => batchCohort(toy, [0.5], { batchSize: 2, rng: Rng.fromSeed(1) }), "FT305", "position 0.5");
  });
});

describe("evaluation batches", () => {
  it("keeps the set's order and masks the padding of the last batch", () => {
    const batches = batchEvaluation(train, 4);
    expect(batches.x.shape).toEqual([3, 4, 2]);
    expect(Array.from(batches.mask.data)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
    expect(Array.from(batches.y.data)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0, 0]);
    expect(Array.from(batches.x.data.subarray(0, 20))).toEqual(Array.from(train.x));
    expect(Array.from(batches.x.data.subarray(20))).toEqual([0, 0, 0, 0]);
    expect(batchEvaluation(train, 5).x.shape).toEqual([2, 5, 2]);
  });
});

describe("client sampling and rounds", () => {
  it("samples distinct clients, sorted, reproducibly", () => {
    const cohort = sampleCohort(100, 10, Rng.fromSeed(1));
    expect(cohort).toHaveLength(10);
    expect(new Set(cohort).size).toBe(10);
    expect(Array.from(cohort)).toEqual(Array.from(cohort).sort((a, b) => a - b));
    expect(sampleCohort(100, 10, Rng.fromSeed(1))).toEqual(cohort);
    expect(sampleCohort(100, 10, Rng.fromSeed(2))).not.toEqual(cohort);
    expectFtError(() => sampleCohort(5, 6, Rng.fromSeed(1)), "FT305", "exceeds the 5 clients");
  });

  it("draws each round from its own fork, so a round does not depend on earlier ones", () => {
    const run = Rng.fromSeed(9);
    const round = (r: number) => roundCohort(toy, { rng: run, round: r, clientsPerRound: 2, batchSize: 2 });
    expect(round(5)).toEqual(round(5));
    const cohorts = new Set([0, 1, 2, 3, 4, 5, 6, 7].map((r) => Array.from(round(r).clients).join()));
    expect(cohorts.size).toBeGreaterThan(1);
  });

  it("rejects partitions that point outside the train set, and repeated ids", () => {
    expectFtError(() => federate(train, train, [Int32Array.of(0, 10)]), "FT302", "example index 10 is not a whole number in [0, 10)");
    // What a JavaScript caller may pass where Int32Arrays are declared: each read as a wrong example before.
    expectFtError(() => federate(train, train, [[0, Number.NaN]] as never), "FT302", "example index NaN is not a whole number");
    expectFtError(() => federate(train, train, [[0, 1.5]] as never), "FT302", "example index 1.5 is not a whole number");
    expectFtError(() => federate(train, train, [Int32Array.of(0), Int32Array.of()]), "FT302", "client client-001: holds no example");
    expectFtError(() => federate(train, train, [Int32Array.of(0), Int32Array.of(1)], ["a", "a"]), "FT302", "unique");
    const short = { x: new Float32Array(3), y: Int32Array.of(0, 1), featureShape: [2], numClasses: 2 };
    expectFtError(() => labelledDataset("bad", short), "FT302", "2 labels need 4 feature values, got 3");
  });
});

describe("MNIST in FedAvg's setting", () => {
  // The 10,000 test images keep this quick: 200 shards of 50 make 100 clients of 100.
  const mnist = loadMnist("test");
  const shards = partitionShards(mnist.y, { numShards: 200, shardsPerClient: 2 }, Rng.fromSeed(1));
  const federated = federate(mnist, mnist, shards);

  it("batches a cohort of 10 clients with B=10 and E=5, gathering each client's own images", () => {
    const round = { rng: Rng.fromSeed(1), round: 0, clientsPerRound: 10, batchSize: 10, epochs: 5 };
    const batches = roundCohort(federated, round);
    expect(batches.x.shape).toEqual([10, 50, 10, 28, 28]);
    expect(Array.from(batches.count.data)).toEqual(new Array<number>(10).fill(100));
    expect(batches.mask.data.every((m) => m === 1)).toBe(true);
    const perClient = 500 * 784;
    batches.clients.forEach((client, position) => {
      let expected = 0;
      for (const example of federated.clientIndices[client]!) {
        for (let k = example * 784; k < (example + 1) * 784; k++) expected += mnist.x[k]!;
      }
      const clientSlots = batches.x.data.subarray(position * perClient, (position + 1) * perClient);
      const gathered = clientSlots.reduce((s, v) => s + v, 0);
      expect(gathered).toBeCloseTo(5 * expected, 0);
    });
  });
});
