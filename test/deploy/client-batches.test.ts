/**
 * A served client's batches (src/deploy/client/batches.ts): each local epoch is a fresh,
 * uniformly random order of the client's examples from the CSPRNG, drawn a block of words at a
 * time; past its examples the slots are masked.
 */
import { describe, expect, it } from "vitest";
import { clientBatches } from "../../src/deploy/client/batches.js";

/** n examples whose one feature is their own index. */
const indexed = (n: number) => ({ x: Float32Array.from({ length: n }, (_, i) => i), y: new Int32Array(n) });

describe("a served client's batches", () => {
  it("holds every example once per epoch, then masked slots", () => {
    const batches = clientBatches(indexed(7), { steps: 6, batchSize: 4, epochs: 3, featureShape: [1] });
    const x = Array.from(batches.x.data as Float32Array);
    for (let epoch = 0; epoch < 3; epoch++) expect(x.slice(7 * epoch, 7 * epoch + 7).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(Array.from(batches.mask.data as Float32Array)).toEqual([...Array<number>(21).fill(1), ...Array<number>(3).fill(0)]);
  });

  it("shuffles more examples than one block of random words holds into a permutation", () => {
    const n = 40_000;
    const x = clientBatches(indexed(n), { steps: n / 100, batchSize: 100, epochs: 1, featureShape: [1] }).x.data as Float32Array;
    const seen = new Uint8Array(n);
    for (const v of x) seen[v]!++;
    expect(seen.every((count) => count === 1)).toBe(true);
    expect(Array.from(x.subarray(0, 100))).not.toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it("puts each example first equally often (8,000 shuffles of 4: each count within 6 standard deviations of 2,000)", () => {
    const first = [0, 0, 0, 0];
    for (let draw = 0; draw < 8000; draw++) first[(clientBatches(indexed(4), { steps: 1, batchSize: 4, epochs: 1, featureShape: [1] }).x.data as Float32Array)[0]!]!++;
    const sd = Math.sqrt(8000 * 0.25 * 0.75);
    for (const count of first) expect(Math.abs(count - 2000)).toBeLessThan(6 * sd);
  });
});
