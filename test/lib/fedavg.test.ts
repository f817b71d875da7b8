/**
 * FedAvg, FedProx and FedSGD against hand computations: FedProx with mu = 0 is FedAvg bit for
 * bit, FedProx's proximal pull and FedSGD's full-batch step match float64 arithmetic, and the
 * typed round functions compute what the programs do. (Learning and padding: algorithms.test.ts.)
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, f32, i32, program } from "../../src/index.js";
import { fedAvg, fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { fedProx, fedProxProgram } from "../../src/lib/algorithms/fedprox.js";
import { fedSgdProgram } from "../../src/lib/algorithms/fedsgd.js";
import { Rng } from "../../src/lib/random.js";
import {
  batchInputs,
  host,
  oneParam,
  oneParamGradient,
  oneParamLocalSgd,
  pointCohort,
  read,
  separableCohort,
  tiny,
  twoClients,
} from "./helpers.js";

const cohort = separableCohort([12, 7, 4], 4);

describe("FedAvg and FedProx", () => {
  // Exactly on wasm, which runs both updates with the same kernels; onnx folds FedAvg's update
  // into one Gemm but not FedProx's (its gradient has the proximal term), a last-bit difference.
  test("FedProx with mu = 0 equals FedAvg exactly", async () => {
    const params = { w: host([2, 2], [0.3, -0.2, 0.1, 0.4]), b: host([2], [0.05, -0.05]) };
    const avg = await read(await fedAvgProgram(tiny).run({ params, ...batchInputs(cohort), lr: 0.3 }, { backend: "wasm" }));
    const prox = await read(await fedProxProgram(tiny).run({ params, ...batchInputs(cohort), lr: 0.3, mu: 0 }, { backend: "wasm" }));
    expect(prox).toEqual(avg);
  });

  test("FedProx's proximal term pulls each local step toward the server model", async () => {
    const [w0, lr, mu] = [0.4, 0.5, 2];
    const out = await read(await fedProxProgram(oneParam).run({ params: { w: [w0] }, ...batchInputs(pointCohort(twoClients)), lr, mu }));
    const trained = twoClients.map((batches) => oneParamLocalSgd(w0, batches, lr, (g, w) => g + mu * (w - w0)));
    const counts = twoClients.map((batches) => batches.flat().length);
    const mean = (trained[0]! * counts[0]! + trained[1]! * counts[1]!) / (counts[0]! + counts[1]!);
    expect((out.params.w as number[])[0]).toBeCloseTo(mean, 6);
    // The second client's second step is where the pull shows: without it the result differs.
    const plain = twoClients.map((batches) => oneParamLocalSgd(w0, batches, lr));
    expect(Math.abs(plain[1]! - trained[1]!)).toBeGreaterThan(1e-2);
  });

  test("the typed round functions compute what the programs do", async () => {
    const inputs = { params: atServer(tiny.params), x: atClients(f32(["S", "B", 2])), y: atClients(i32(["S", "B"])), mask: atClients(f32(["S", "B"])), count: atClients(f32([])) };
    const userProgram = program(inputs, ({ params, x, y, mask, count }) => ({
      avg: fedAvg(tiny)(params, { x, y, mask, count }, { lr: 0.3 }),
      prox: fedProx(tiny)(params, { x, y, mask, count }, { lr: 0.3, mu: 0.1 }),
    }));
    const params = tiny.init(Rng.fromSeed(0));
    const both = await read(await userProgram.run({ params, ...batchInputs(cohort) }));
    expect(both.avg).toEqual(await read(await fedAvgProgram(tiny).run({ params, ...batchInputs(cohort), lr: 0.3 })));
    expect(both.prox).toEqual(await read(await fedProxProgram(tiny).run({ params, ...batchInputs(cohort), lr: 0.3, mu: 0.1 })));
  });
});

describe("FedSGD", () => {
  test("one round is one full-batch gradient step over all the cohort's examples", async () => {
    const [w0, lr] = [0.4, 0.5];
    const out = await read(await fedSgdProgram(oneParam).run({ params: { w: [w0] }, ...batchInputs(pointCohort(twoClients)), lr }));
    const all = twoClients.flat(2);
    expect((out.params.w as number[])[0]).toBeCloseTo(w0 - lr * oneParamGradient(w0, all), 6);
    const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
    const meanLoss = all.reduce((sum, { a, y }) => sum - Math.log(y === 1 ? sigmoid(w0 * a) : 1 - sigmoid(w0 * a)), 0) / all.length;
    expect(out.loss as number).toBeCloseTo(meanLoss, 6);
  });

});
