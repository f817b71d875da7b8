/**
 * examples/secure-sum-of-counts.ts: an aggregator's next returns the example-weighted mean (here
 * the pooled label shares), raw secureSum the exact sum; the secure stage clips each coordinate
 * to its clip silently, where raw secureSum fails with FT309 on a value outside its range.
 */
import { expect, test } from "vitest";
import { labelShares, MAX_EXAMPLES, release, syntheticLabels, CLASSES } from "../../examples/secure-sum-of-counts.js";
import { atClients, atServer, f32, i32, program, secureSum } from "../../src/index.js";
import { aggregator, aggregationStages as s, Rng } from "../../src/lib/index.js";

const exactCounts = (labels: readonly (readonly number[])[]) => {
  const counts = new Array<number>(CLASSES).fill(0);
  for (const client of labels) for (const y of client) counts[y]! += 1;
  return counts;
};

test("next gives the weighted mean of the clients' shares (sum of counts over examples); secureSum the exact sum", async () => {
  expect(labelShares.aggregators).toEqual(["secureSum"]);
  const labels = syntheticLabels(Rng.fromSeed(3), 15);
  const exact = exactCounts(labels);
  const examples = exact.reduce((a, b) => a + b, 0);
  const { shares, totals } = await release(labels);
  expect(totals).toEqual(exact);
  // The mean, not the sum: each share is the count over all examples (quantization error only).
  shares.forEach((share, k) => expect(Math.abs(share - exact[k]! / examples)).toBeLessThan(1e-4));
  // An unweighted mean of the clients' shares would differ: the weights are the counts.
  const unweighted = exact.map((_, k) => labels.reduce((sum, client) => sum + client.filter((y) => y === k).length / client.length, 0) / labels.length);
  expect(Math.max(...shares.map((share, k) => Math.abs(share - unweighted[k]!)))).toBeGreaterThan(1e-3);
});

test("a client with more examples than maxWeight fails the run with FT309, never a wrapped sum", async () => {
  const labels = [Array.from({ length: MAX_EXAMPLES + 1 }, () => 0), [1, 2]];
  await expect(release(labels)).rejects.toThrow(/FT309/);
});

test("the secure stage clips each coordinate to [-clip, clip]; raw secureSum refuses the same value (FT309)", async () => {
  const chain = aggregator(s.secure({ bits: 30, clip: 1, maxWeight: 10, maxClients: 4 }));
  const inputs = { u: atClients(f32([2]), { private: true }), mask: atClients(f32([1]), { private: true }), count: atClients(f32([]), { private: true }), key: atServer(i32([2])), round: i32([]) };
  const viaNext = program(inputs, ({ u, mask, count, key, round }) => chain.next(u, { mask, count }, { key, round }).value);
  const raw = program(inputs, ({ u, key }) => secureSum(u, { bits: 30, key, range: [-1, 1], scale: 1000 }));
  const values = { u: [[3, -0.5], [0.5, -7]], mask: [[1], [1]], count: [1, 1], key: [1, 2], round: 0 };
  const mean = Array.from(await (await viaNext.run(values)).data());
  // (clip(3) + 0.5) / 2 and (-0.5 + clip(-7)) / 2.
  expect(mean[0]).toBeCloseTo(0.75, 4);
  expect(mean[1]).toBeCloseTo(-0.75, 4);
  await expect(raw.run(values)).rejects.toThrow(/FT309/);
});
