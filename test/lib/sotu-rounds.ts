/**
 * A few FedAvg rounds of a text model on four presidents' State of the Union windows, with the
 * held-out loss before and after: the check that a character model learns (test/lib/models.test.ts,
 * test/lib/transformer.test.ts).
 */
import type { AnyModel } from "../../src/lib/algorithms/types.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { batchCohort, batchEvaluation, federate } from "../../src/lib/data/federated.js";
import { loadSotuCharacters } from "../../src/lib/data/sotu.js";
import { Rng } from "../../src/lib/random.js";
import { read } from "./helpers.js";

/** Held-out loss before and after `rounds` FedAvg rounds (64 windows of each of the first four presidents, batches of 16). */
export async function sotuLossBeforeAndAfter(model: AnyModel, { rounds = 3, lr }: { rounds?: number; lr: number }): Promise<{ before: number; after: number }> {
  const sequenceLength = model.inputShape[0]!;
  const sotu = loadSotuCharacters({ sequenceLength, stride: 97 });
  const small = federate(sotu.train, sotu.test, sotu.clientIndices.slice(0, 4).map((indices) => indices.slice(0, 64)));
  const held = batchEvaluation({ ...sotu.test, y: sotu.test.y.slice(0, 256), x: sotu.test.x.slice(0, 256 * sequenceLength) }, 64);
  const evaluate = evaluationProgram(model);
  const round = fedAvgProgram(model);
  const rng = Rng.fromSeed(5);
  let params = model.init(rng.fork("init"));
  const before = await read(await evaluate.run({ params, ...held }));
  for (let r = 0; r < rounds; r++) {
    const cohort = batchCohort(small, [0, 1, 2, 3], { batchSize: 16, rng: rng.fork(`round:${r}`) });
    const out = await round.run({ params, x: cohort.x, y: cohort.y, mask: cohort.mask, count: cohort.count, lr });
    await read(out.loss);
    params = Object.fromEntries(
      await Promise.all(Object.entries(out.params).map(async ([k, t]) => [k, { shape: t.shape, data: (await t.data()) as Float32Array }])),
    ) as typeof params;
    Object.values(out.params).forEach((t) => t.dispose());
  }
  const after = await read(await evaluate.run({ params, ...held }));
  return { before: before.loss as number, after: after.loss as number };
}
