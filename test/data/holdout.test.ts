/**
 * Per-client held-out data: every client's examples split into disjoint training and held-out
 * parts whose union is the client's, ceil(fraction * n) held out but one example always kept for
 * training, the same split for the same seed, and held-out batches that count them.
 */
import { describe, expect, test } from "vitest";
import { labelledDataset } from "../../src/lib/data/dataset.js";
import { federate } from "../../src/lib/data/federated.js";
import { batchHeldOut, heldOutCount, holdOutPerClient } from "../../src/lib/data/holdout.js";
import { Rng } from "../../src/lib/random.js";

const sizes = [10, 1, 2, 7, 25];
function dataset() {
  const total = sizes.reduce((a, b) => a + b, 0);
  const train = labelledDataset("train", { x: Float32Array.from({ length: total * 2 }, (_, i) => i), y: Int32Array.from({ length: total }, (_, i) => i % 3), featureShape: [2], numClasses: 3 });
  let start = 0;
  const partition = sizes.map((n) => {
    const part = Int32Array.from({ length: n }, (_, i) => start + i);
    start += n;
    return part;
  });
  return federate(train, train, partition);
}

describe("holdOutPerClient", () => {
  test("splits each client into disjoint parts whose union is the client's examples", () => {
    const data = dataset();
    const split = holdOutPerClient(data, 0.2, Rng.fromSeed(4));
    expect(split.clientHeldOut!.map((h) => h.length)).toEqual([2, 0, 1, 2, 5]);
    split.clientIndices.forEach((train, c) => {
      const held = split.clientHeldOut![c]!;
      expect([...train, ...held].sort((a, b) => a - b)).toEqual([...data.clientIndices[c]!]);
      expect(train.length).toBeGreaterThanOrEqual(1);
    });
  });

  test("is seeded: the same seed gives the same split, another seed another", () => {
    const a = holdOutPerClient(dataset(), 0.3, Rng.fromSeed(1));
    const b = holdOutPerClient(dataset(), 0.3, Rng.fromSeed(1));
    const c = holdOutPerClient(dataset(), 0.3, Rng.fromSeed(2));
    expect(a.clientHeldOut).toEqual(b.clientHeldOut);
    expect(a.clientHeldOut).not.toEqual(c.clientHeldOut);
  });

  test("heldOutCount: ceil(fraction * n), at most n - 1", () => {
    expect([0, 1, 2, 5, 600].map((n) => heldOutCount(n, 0.2))).toEqual([0, 0, 1, 1, 120]);
    expect(heldOutCount(3, 0.99)).toBe(2);
  });

  test("a fraction outside [0, 1) or a second split is FT305", () => {
    expect(() => holdOutPerClient(dataset(), 1, Rng.fromSeed(0))).toThrow(/^FT305: clientHoldout: expected a share/);
    expect(() => holdOutPerClient(dataset(), Number.NaN, Rng.fromSeed(0))).toThrow(/FT305/);
    const once = holdOutPerClient(dataset(), 0.2, Rng.fromSeed(0));
    expect(() => holdOutPerClient(once, 0.2, Rng.fromSeed(0))).toThrow(/hold out examples already/);
  });
});

describe("batchHeldOut", () => {
  test("batches the held-out examples of the clients asked, counting them", () => {
    const split = holdOutPerClient(dataset(), 0.2, Rng.fromSeed(4));
    const b = batchHeldOut(split, [4, 1, 0], 2, Rng.fromSeed(0));
    expect(b.x.shape).toEqual([3, 3, 2, 2]);
    expect([...b.count.data]).toEqual([5, 0, 2]);
    const realLabels = (c: number) => [...b.y.data.subarray(c * 6, c * 6 + 6)].filter((_, i) => b.mask.data[c * 6 + i] === 1).sort();
    expect(realLabels(0)).toEqual([...split.clientHeldOut![4]!].map((i) => i % 3).sort());
    expect(realLabels(1)).toEqual([]);
  });

  test("without held-out data it is FT305 naming --client-holdout", () => {
    expect(() => batchHeldOut(dataset(), [0], 2, Rng.fromSeed(0))).toThrow(/FT305: clientHoldout: federated evaluation needs held-out data/);
  });
});
