/**
 * SCAFFOLD's option II control variates against a float64 hand computation on the
 * one-parameter model. The first client has one real batch and one padding batch, so its K
 * (real local steps) is 1 where the cohort's tensors hold 2 batches.
 */
import { expect, test } from "vitest";
import { scaffoldProgram } from "../../src/lib/algorithms/scaffold.js";
import { batchInputs, oneParam, oneParamLocalSgd, pointCohort, read, twoClients } from "./helpers.js";

test("one round follows Karimireddy et al.'s option II formulas", async () => {
  const [w0, lr, serverLr, participation] = [0.4, 0.5, 0.8, 0.5];
  const [c, clientControls] = [0.1, [0.3, -0.2]];
  const cohort = pointCohort(twoClients);
  expect(cohort.mask.shape).toEqual([2, 2, 2]);

  const out = await read(
    await scaffoldProgram(oneParam, { participation }).run({
      params: { w: [w0] },
      ...batchInputs(cohort),
      lr,
      serverLr,
      control: { w: [c] },
      clientControls: { w: clientControls.map((ci) => [ci]) },
    }),
  );

  const trained = twoClients.map((batches, i) => oneParamLocalSgd(w0, batches, lr, (g) => g - clientControls[i]! + c));
  const steps = twoClients.map((batches) => batches.length); // 1 and 2: the padding batch does not count
  const nextControls = clientControls.map((ci, i) => ci - c + (w0 - trained[i]!) / (steps[i]! * lr));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  expect((out.clientControls.w as number[][]).map(([ci]) => ci)).toEqual(nextControls.map((ci) => expect.closeTo(ci, 5)));
  expect((out.control.w as number[])[0]).toBeCloseTo(c + participation * mean(nextControls.map((ci, i) => ci - clientControls[i]!)), 5);
  expect((out.params.w as number[])[0]).toBeCloseTo(w0 + serverLr * mean(trained.map((y) => y - w0)), 6);
});
