/**
 * The server optimisers against float64 hand computations on the one-parameter model: FedAdam,
 * FedYogi and FedAdagrad (Reddi et al. 2021, Algorithm 2) and DiLoCo's outer Nesterov momentum,
 * over two rounds each so that the state a round returns is the state the next one uses.
 */
import { describe, expect, test } from "vitest";
import { dilocoProgram } from "../../src/lib/algorithms/diloco.js";
import { fedOptProgram } from "../../src/lib/algorithms/fedopt.js";
import type { AdaptiveOptimizer } from "../../src/lib/algorithms/server-optimizers.js";
import { sgd } from "../../src/lib/optimizers/optimizers.js";
import { batchInputs, oneParam, oneParamLocalSgd, pointCohort, read, twoClients } from "./helpers.js";

const data = batchInputs(pointCohort(twoClients));
const [w0, lr] = [0.4, 0.5];

/** The example-weighted mean of the clients' local SGD deltas from w. */
function meanDelta(w: number): number {
  const counts = twoClients.map((batches) => batches.flat().length);
  const deltas = twoClients.map((batches) => oneParamLocalSgd(w, batches, lr) - w);
  return (deltas[0]! * counts[0]! + deltas[1]! * counts[1]!) / (counts[0]! + counts[1]!);
}

const first = (tree: unknown) => (tree as { w: number[] }).w[0]!;

describe("FedOpt", () => {
  const options = { beta1: 0.8, beta2: 0.95, tau: 0.01 };
  const serverLr = 0.3;

  const handStep: Record<AdaptiveOptimizer, (v: number, squared: number) => number> = {
    adam: (v, squared) => options.beta2 * v + (1 - options.beta2) * squared,
    yogi: (v, squared) => v - (1 - options.beta2) * squared * Math.sign(v - squared),
    adagrad: (v, squared) => v + squared,
  };

  test.each(["adam", "yogi", "adagrad"] as const)("%s: two rounds match the hand computation", async (optimizer) => {
    const round = fedOptProgram(oneParam, { optimizer, ...options });
    // v starts between the two rounds' delta^2, so Yogi's sign(v - delta^2) takes both values.
    let [w, m, v] = [w0, 0.02, 0.001];
    let inputs = { params: { w: [w] }, state: { m: { w: [m] }, v: { w: [v] } } };
    const signs = new Set<number>();
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ ...inputs, ...data, lr, serverLr }));
      const delta = meanDelta(w);
      signs.add(Math.sign(v - delta * delta));
      m = options.beta1 * m + (1 - options.beta1) * delta;
      v = handStep[optimizer](v, delta * delta);
      w = w + (serverLr * m) / (Math.sqrt(v) + options.tau);
      expect(first(out.state.m)).toBeCloseTo(m, 6);
      expect(first(out.state.v)).toBeCloseTo(v, 6);
      expect(first(out.params)).toBeCloseTo(w, 5);
      inputs = { params: out.params as never, state: out.state as never };
    }
    expect([...signs].sort()).toEqual([-1, 1]);
  });
});

describe("DiLoCo", () => {
  test("two rounds of outer Nesterov momentum match the hand computation", async () => {
    const [serverLr, momentum] = [0.7, 0.9];
    // The hand computation's inner steps are plain SGD; DiLoCo's default inner AdamW has its own test (optimizers-algorithms.test.ts).
    const round = dilocoProgram(oneParam, { innerOptimizer: (rate) => sgd(rate) });
    let [w, buffer] = [w0, 0.05];
    let inputs = { params: { w: [w] }, buffer: { w: [buffer] } };
    for (let r = 0; r < 2; r++) {
      const out = await read(await round.run({ ...inputs, ...data, lr, serverLr }));
      const outerGradient = -meanDelta(w); // the server model minus the mean client model
      buffer = momentum * buffer + outerGradient;
      w = w - serverLr * (outerGradient + momentum * buffer);
      expect(first(out.buffer)).toBeCloseTo(buffer, 6);
      expect(first(out.params)).toBeCloseTo(w, 6);
      inputs = { params: out.params as never, buffer: out.buffer as never };
    }
  });
});
