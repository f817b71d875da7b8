/**
 * The fairness algorithms against float64 hand computations on the one-parameter model:
 * q-FedAvg (Li et al. 2020, Algorithm 2, L = 1/lr) and agnostic FL (Mohri et al. 2019:
 * lambda-weighted client deltas scaled by N/m, projected ascent of lambda), whose projection
 * is checked against a bisection for the simplex's threshold.
 */
import { describe, expect, test } from "vitest";
import { FedTensorError, f32, atServer, program } from "../../src/index.js";
import { aflProgram, initialLambda, projectToSimplex } from "../../src/lib/algorithms/afl.js";
import { qfflProgram } from "../../src/lib/algorithms/qffl.js";
import { batchInputs, oneParam, oneParamLocalSgd, pointCohort, read, twoClients, type Point } from "./helpers.js";

const data = batchInputs(pointCohort(twoClients));
const [w0, lr] = [0.4, 0.5];
const first = (tree: unknown) => (tree as { w: number[] }).w[0]!;

/** The one-parameter model's mean cross-entropy over points, in float64. */
function oneParamLoss(w: number, points: readonly Point[]): number {
  const p1 = (a: number) => 1 / (1 + Math.exp(-w * a));
  return points.reduce((sum, { a, y }) => sum - Math.log(y === 1 ? p1(a) : 1 - p1(a)), 0) / points.length;
}

const lossesAt = (w: number) => twoClients.map((batches) => oneParamLoss(w, batches.flat()));
const trainedFrom = (w: number) => twoClients.map((batches) => oneParamLocalSgd(w, batches, lr));

describe("q-FedAvg", () => {
  const round = qfflProgram(oneParam);

  test.each([0.5, 1, 3])("q = %s: two rounds match Algorithm 2", async (q) => {
    let w = w0;
    let params = { w: [w0] };
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ params, ...data, lr, q }));
      const L = 1 / lr;
      const F = lossesAt(w).map((f) => f + 1e-10);
      const steps = trainedFrom(w).map((wk) => L * (w - wk));
      const deltas = steps.map((dw, k) => F[k]! ** q * dw);
      const hs = steps.map((dw, k) => q * F[k]! ** (q - 1) * dw * dw + L * F[k]! ** q);
      w = w - (deltas[0]! + deltas[1]!) / (hs[0]! + hs[1]!);
      expect(first(out.params)).toBeCloseTo(w, 5);
      params = out.params as never;
    }
  });

  test("q = 0 is FedAvg with every client weighted alike", async () => {
    const out = await read(await round.run({ params: { w: [w0] }, ...data, lr, q: 0 }));
    const [a, b] = trainedFrom(w0);
    expect(first(out.params)).toBeCloseTo((a! + b!) / 2, 6);
  });
});

/** The projection onto the simplex by bisection on the threshold theta: sum(max(v - theta, 0)) = 1. */
function bisectSimplex(v: readonly number[]): number[] {
  const mass = (theta: number) => v.reduce((sum, x) => sum + Math.max(x - theta, 0), 0);
  let [lo, hi] = [Math.min(...v) - 1, Math.max(...v)];
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (mass(mid) > 1) lo = mid;
    else hi = mid;
  }
  return v.map((x) => Math.max(x - (lo + hi) / 2, 0));
}

describe("agnostic FL", () => {
  const clients = 5;
  const round = aflProgram(oneParam, { clients });
  // The two clients of the cohort are clients 3 and 1 of the 5.
  const positions = [3, 1];
  const lambda = [0.1, 0.3, 0.2, 0.25, 0.15];

  test("one round: lambda-weighted deltas scaled by N/m, projected ascent on lambda", async () => {
    const aflLr = 0.5;
    const out = await read(await round.run({ params: { w: [w0] }, ...data, lr, aflLr, lambda, client: positions }));
    const scale = clients / 2;
    const trained = trainedFrom(w0);
    const losses = lossesAt(w0);
    const w1 = w0 + scale * positions.reduce((sum, k, i) => sum + lambda[k]! * (trained[i]! - w0), 0);
    const ascended = lambda.map((l, k) => l + aflLr * scale * (positions.includes(k) ? losses[positions.indexOf(k)]! : 0));
    const projected = bisectSimplex(ascended);
    expect(projected.filter((x) => x === 0).length).toBeGreaterThan(0); // the projection clips here
    expect(first(out.params)).toBeCloseTo(w1, 6);
    expect(out.lambda as number[]).toEqual(projected.map((x) => expect.closeTo(x, 6)));
    expect(out.worstLoss).toBeCloseTo(Math.max(...losses), 6);
  });

  test("uniform lambda and aflLr 0: FedAvg with every client weighted alike, lambda unchanged", async () => {
    const uniform = initialLambda(clients);
    const out = await read(await round.run({ params: { w: [w0] }, ...data, lr, aflLr: 0, lambda: uniform, client: positions }));
    const [a, b] = trainedFrom(w0);
    expect(first(out.params)).toBeCloseTo((a! + b!) / 2, 6);
    expect(out.lambda as number[]).toEqual(Array.from({ length: clients }, () => expect.closeTo(0.2, 7)));
  });

  test("the projection onto the simplex matches the bisection", async () => {
    const project = program({ v: atServer(f32([6])) }, ({ v }) => projectToSimplex(v, 6) as never);
    for (const v of [
      [0.2, -0.1, 0.5, 0.9, 0.0, 0.3],
      [5, 5, 5, 5, 5, 5],
      [-3, -1, -2, -7, -1.5, -4],
      [0.1, 0.2, 0.3, 0.15, 0.05, 0.2],
    ]) {
      const out = (await read(await project.run({ v }))) as number[];
      expect(out).toEqual(bisectSimplex(v).map((x) => expect.closeTo(x, 6)));
    }
  });

  test("a client position outside 0..N-1 is FT302, not a client with no weight", async () => {
    const error = await round.run({ params: { w: [w0] }, ...data, lr, aflLr: 0.1, lambda, client: [3, 5] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FedTensorError);
    expect((error as Error).message).toBe("FT302: afl_one_param input client: client 1's position 5 is not one of the 5 clients 0..4");
    expect(() => aflProgram(oneParam, { clients: 0 })).toThrow("FT302: aflProgram clients: must be a whole number of clients >= 1, got 0");
  });
});
