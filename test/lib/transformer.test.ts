/**
 * The decoder-only transformer on State of the Union text: int32 windows in, one logit row per
 * window, causal attention (each position's state ignores the characters after it), and a few
 * FedAvg rounds that lower the held-out loss.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, i32, map, program } from "../../src/index.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { batchCohort, batchEvaluation, federate } from "../../src/lib/data/federated.js";
import { CHARACTER_VOCABULARY_SIZE, loadSotuCharacters } from "../../src/lib/data/sotu.js";
import { transformerModel, transformerStates } from "../../src/lib/models/transformer.js";
import { Rng } from "../../src/lib/random.js";
import { read } from "./helpers.js";

describe("the transformer", () => {
  const sequenceLength = 16;
  const model = transformerModel({ sequenceLength, width: 16, heads: 2, blocks: 2 });

  test("takes int32 windows and gives one row of logits per window", async () => {
    expect(fedAvgProgram(model).signature).toContain(`x={i32[S,B,${sequenceLength}]}@CLIENTS`);
    const logits = program({ params: atServer(model.params), x: atClients(i32(["B", sequenceLength])) }, ({ params, x }) =>
      map((p, ids) => model.logits(p, ids), broadcast(params), x),
    );
    expect(logits.signature).toContain(`-> {f32[B,${CHARACTER_VOCABULARY_SIZE}]}@CLIENTS`);
    const params = model.init(Rng.fromSeed(1));
    const ids = Int32Array.from({ length: 2 * 3 * sequenceLength }, (_, i) => (i * 7) % CHARACTER_VOCABULARY_SIZE);
    const out = (await read(await logits.run({ params, x: { shape: [2, 3, sequenceLength], data: ids } }))) as number[][][];
    expect([out.length, out[0]!.length, out[0]![0]!.length]).toEqual([2, 3, CHARACTER_VOCABULARY_SIZE]);
    expect(out.flat(2).every(Number.isFinite)).toBe(true);
  });

  test("is causal: a position's state depends on the characters up to it only", async () => {
    const params = model.init(Rng.fromSeed(2));
    const states = program({ params: atServer(model.params), x: atClients(i32(["B", sequenceLength])) }, ({ params, x }) =>
      map((p, ids) => transformerStates(p, ids, 2), broadcast(params), x),
    );
    const window = Array.from({ length: sequenceLength }, (_, i) => (i * 5 + 3) % CHARACTER_VOCABULARY_SIZE);
    const change = (at: number) => window.map((c, i) => (i === at ? (c + 1) % CHARACTER_VOCABULARY_SIZE : c));
    const rows = [window, change(sequenceLength - 1), change(5)];
    const out = (await read(await states.run({ params, x: { shape: [1, rows.length, sequenceLength], data: Int32Array.from(rows.flat()) } }))) as number[][][][];
    const [base, changedLast, changedSixth] = out[0]!;
    // Two blocks deep, every position before the changed one keeps its state exactly; the changed one and all after it move.
    expect(changedLast!.slice(0, -1)).toEqual(base!.slice(0, -1));
    expect(changedLast!.at(-1)).not.toEqual(base!.at(-1));
    expect(changedSixth!.slice(0, 5)).toEqual(base!.slice(0, 5));
    changedSixth!.slice(5).forEach((state, t) => expect(state, `position ${t + 5}`).not.toEqual(base![t + 5]));
  });

  test("three FedAvg rounds on four presidents lower the held-out loss", async () => {
    const sotu = loadSotuCharacters({ sequenceLength, stride: 97 });
    const small = federate(sotu.train, sotu.test, sotu.clientIndices.slice(0, 4).map((indices) => indices.slice(0, 64)));
    const held = batchEvaluation({ ...sotu.test, y: sotu.test.y.slice(0, 256), x: sotu.test.x.slice(0, 256 * sequenceLength) }, 64);
    const evaluate = evaluationProgram(model);
    const round = fedAvgProgram(model);
    const rng = Rng.fromSeed(5);
    let params = model.init(rng.fork("init"));
    const before = await read(await evaluate.run({ params, ...held }));
    for (let r = 0; r < 3; r++) {
      const cohort = batchCohort(small, [0, 1, 2, 3], { batchSize: 16, rng: rng.fork(`round:${r}`) });
      const out = await round.run({ params, x: cohort.x, y: cohort.y, mask: cohort.mask, count: cohort.count, lr: 0.1 });
      await read(out.loss);
      params = Object.fromEntries(
        await Promise.all(Object.entries(out.params).map(async ([k, t]) => [k, { shape: t.shape, data: (await t.data()) as Float32Array }])),
      ) as typeof params;
      Object.values(out.params).forEach((t) => t.dispose());
    }
    const after = await read(await evaluate.run({ params, ...held }));
    expect(before.loss as number).toBeGreaterThan(0.8 * Math.log(CHARACTER_VOCABULARY_SIZE));
    expect(after.loss as number).toBeLessThan((before.loss as number) - 0.5);
  }, 120_000);

  test("refuses heads that do not divide the width", () => {
    expect(() => transformerModel({ width: 10, heads: 3 })).toThrow(/^FT305: .*3 heads do not divide width 10/);
  });
});
