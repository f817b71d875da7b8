/**
 * The federated analytics programs and the centralised evaluation against plain JavaScript
 * computations of the same statistics.
 */
import { describe, expect, test } from "vitest";
import { federatedHistogramProgram, federatedMeanProgram } from "../../src/lib/algorithms/analytics.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { Rng } from "../../src/lib/random.js";
import { read, separableCohort, tiny, host } from "./helpers.js";

describe("federated analytics", () => {
  test("the federated mean of a [3] value per client is the mean of the clients' values", async () => {
    const rng = Rng.fromSeed(11);
    const values = Array.from({ length: 5 }, () => Array.from({ length: 3 }, () => rng.normal(2, 3)));
    const mean = federatedMeanProgram([3]);
    expect(mean.signature).toBe("(<value={f32[3]}@CLIENTS> -> f32[3]@SERVER)");
    const out = (await read(await mean.run({ value: values }))) as number[];
    const expected = [0, 1, 2].map((j) => values.reduce((sum, v) => sum + v[j]!, 0) / values.length);
    expect(out).toEqual(expected.map((v) => expect.closeTo(v, 5)));
  });

  test("the federated histogram sums the clients' counts, skipping masked slots and values outside the bins", async () => {
    const bins = 6;
    const rng = Rng.fromSeed(12);
    const clients = 4;
    const slots = 9;
    const values = Array.from({ length: clients }, () => Array.from({ length: slots }, () => rng.int(-1, bins + 1)));
    const mask = Array.from({ length: clients }, (_, c) => Array.from({ length: slots }, (_, i) => (i < slots - c ? 1 : 0)));
    const histogram = federatedHistogramProgram(bins);
    expect(histogram.signature).toBe("(<values={i32[N]}@CLIENTS,mask={f32[N]}@CLIENTS> -> f32[6]@SERVER)");
    const out = await read(await histogram.run({ values: { shape: [clients, slots], data: Int32Array.from(values.flat()) }, mask }));
    const expected = new Array<number>(bins).fill(0);
    values.forEach((row, c) => row.forEach((v, i) => {
      if (mask[c]![i] === 1 && v >= 0 && v < bins) expected[v]! += 1;
    }));
    expect(out).toEqual(expected);
    expect(values.flat().some((v) => v < 0 || v >= bins)).toBe(true);
  });
});

describe("centralised evaluation", () => {
  test("accuracy and mean loss over the real examples of padded batches", async () => {
    const params = { w: host([2, 2], [0.5, 1, 2, 0.3]), b: host([2], [0.1, -0.2]) };
    const set = separableCohort([13], 4, 21); // 4 batches, the last with 1 real example
    const batches = { x: { shape: set.x.shape.slice(1), data: set.x.data }, y: { shape: set.y.shape.slice(1), data: set.y.data }, mask: { shape: set.mask.shape.slice(1), data: set.mask.data } };
    expect(batches.mask.shape).toEqual([4, 4]);
    const out = await read(await evaluationProgram(tiny).run({ params, ...batches }));

    let [correct, loss] = [0, 0];
    for (let i = 0; i < 13; i++) {
      const [a, b] = [set.x.data[2 * i]!, set.x.data[2 * i + 1]!];
      const logits = [0, 1].map((k) => a * params.w.data[k]! + b * params.w.data[2 + k]! + params.b.data[k]!);
      const logSum = Math.log(Math.exp(logits[0]!) + Math.exp(logits[1]!));
      const label = set.y.data[i]!;
      loss += logSum - logits[label]!;
      if ((logits[1]! > logits[0]! ? 1 : 0) === label) correct += 1;
    }
    expect(correct).toBeGreaterThan(0); // the parameters are wrong on some examples, not all
    expect(correct).toBeLessThan(13);
    expect(out.accuracy).toBeCloseTo(correct / 13, 6);
    expect(out.loss).toBeCloseTo(loss / 13, 5);
  });
});
