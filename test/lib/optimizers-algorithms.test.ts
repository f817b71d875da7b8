/**
 * The optimisers inside the algorithms, against float64 hand computations on the
 * one-parameter model: clients training with Adam inside map (local state, fresh each round,
 * untouched by padding batches), DiLoCo's default inner AdamW, and FedAvgM's server momentum
 * (SERVER state carried from round to round).
 */
import { describe, expect, test } from "vitest";
import { dilocoProgram } from "../../src/lib/algorithms/diloco.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedAvgMProgram } from "../../src/lib/algorithms/fedavgm.js";
import { adam } from "../../src/lib/optimizers/optimizers.js";
import { batchInputs, oneParam, oneParamGradient, oneParamLocalSgd, pointCohort, read, twoClients, type Point } from "./helpers.js";

const first = (tree: unknown) => (tree as { w: number[] }).w[0]!;

/** Client 0 has an all-padding batch between its two real ones: no step, no change of state. */
const clients: readonly (readonly (readonly Point[])[])[] = [
  [[{ a: 1, y: 1 }, { a: -2, y: 1 }], [], [{ a: 0.5, y: 0 }]],
  [[{ a: 0.5, y: 0 }], [{ a: 1.5, y: 1 }, { a: -1, y: 0 }]],
];

/** Local Adam (AdamW with `decay`) of the one-parameter model in float64, over the non-empty batches. */
function oneParamLocalAdam(w: number, batches: readonly (readonly Point[])[], lr: number, decay = 0): number {
  const [b1, b2, eps] = [0.9, 0.999, 1e-8];
  let [m, v, t] = [0, 0, 0];
  for (const batch of batches) {
    if (batch.length === 0) continue;
    const g = oneParamGradient(w, batch);
    t += 1;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    w = w * (1 - lr * decay) - (lr * (m / (1 - b1 ** t))) / (Math.sqrt(v / (1 - b2 ** t)) + eps);
  }
  return w;
}

/** The example-weighted mean of the clients' deltas from w, each trained by `local`. */
function meanDelta(cohort: typeof clients, w: number, local: (w: number, batches: readonly (readonly Point[])[]) => number): number {
  const counts = cohort.map((batches) => batches.flat().length);
  const total = counts.reduce((a, b) => a + b, 0);
  return cohort.reduce((sum, batches, i) => sum + ((local(w, batches) - w) * counts[i]!) / total, 0);
}

const w0 = 0.4;

describe("client optimisers", () => {
  test("FedAvg with clients training by Adam: state per client, fresh each round, padding skipped", async () => {
    const lr = 0.05;
    const round = fedAvgProgram(oneParam, { clientOptimizer: (rate) => adam(rate) });
    const data = batchInputs(pointCohort(clients));
    let w = w0;
    let params = { w: [w] };
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ params, ...data, lr }));
      w = w + meanDelta(clients, w, (start, batches) => oneParamLocalAdam(start, batches, lr));
      // float32: Adam's normalised steps round to about 1e-6 here.
      expect(first(out.params)).toBeCloseTo(w, 5);
      params = out.params as never;
    }
  });

  test("DiLoCo's inner optimiser is AdamW (weight decay 0.1) by default", async () => {
    const [lr, serverLr, momentum] = [0.05, 0.7, 0.9];
    const out = await read(await dilocoProgram(oneParam).run({ params: { w: [w0] }, ...batchInputs(pointCohort(clients)), lr, serverLr, buffer: { w: [0] } }));
    const g = -meanDelta(clients, w0, (start, batches) => oneParamLocalAdam(start, batches, lr, 0.1));
    expect(first(out.buffer)).toBeCloseTo(g, 5);
    expect(first(out.params)).toBeCloseTo(w0 - serverLr * (g + momentum * g), 5);
  });
});

describe("FedAvgM", () => {
  const data = batchInputs(pointCohort(twoClients));
  const lr = 0.5;
  const sgdDelta = (w: number) => meanDelta(twoClients, w, (start, batches) => oneParamLocalSgd(start, batches, lr));

  test("two rounds of server momentum match Hsu et al.'s rule", async () => {
    const [serverLr, momentum] = [0.8, 0.6];
    const round = fedAvgMProgram(oneParam, { momentum });
    let [w, buffer] = [w0, 0.05];
    let inputs = { params: { w: [w] }, buffer: { w: [buffer] } };
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ ...inputs, ...data, lr, serverLr }));
      buffer = momentum * buffer - sgdDelta(w); // the pseudo-gradient: server model minus the mean client model
      w = w - serverLr * buffer;
      expect(first(out.buffer)).toBeCloseTo(buffer, 6);
      expect(first(out.params)).toBeCloseTo(w, 6);
      inputs = { params: out.params as never, buffer: out.buffer as never };
    }
  });

  test("with momentum 0 and server learning rate 1 it is FedAvg", async () => {
    const params = { w: [w0] };
    const avg = await read(await fedAvgProgram(oneParam).run({ params, ...data, lr }));
    const avgm = await read(await fedAvgMProgram(oneParam, { momentum: 0 }).run({ params, ...data, lr, serverLr: 1, buffer: { w: [0.3] } }));
    expect(first(avgm.params)).toBeCloseTo(first(avg.params), 6);
  });
});
