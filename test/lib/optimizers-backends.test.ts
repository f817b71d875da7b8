/**
 * An optimiser step gives the same result on every backend: onnx, tfjs wasm and cpu against
 * the float64 reference interpreter, for each optimiser at the SERVER and for clients training
 * with a clipped, scheduled AdamW inside map (local state in a scan, padding batches skipped).
 */
import { describe, expect, test } from "vitest";
import { atServer, f32, program } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import { fedAvgMProgram } from "../../src/lib/algorithms/fedavgm.js";
import {
  adagrad,
  adam,
  adamw,
  applyUpdates,
  chain,
  clipByGlobalNorm,
  cosineDecay,
  rmsprop,
  sgd,
  stepDecay,
  warmupCosineDecay,
  yogi,
  type GradientTransformation,
} from "../../src/lib/optimizers/index.js";
import { differences, toHost } from "../differential/compare.js";
import { batchInputs, separableCohort, tiny, withPaddingBatches } from "./helpers.js";

const backends = ["onnx", "wasm", "cpu"] as const;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTransformation = GradientTransformation<any>;

const specs = { w: f32([2, 3]), b: f32([3]) };
const serverOptimizers = {
  sgd: sgd(stepDecay(0.1, { stepSize: 1, gamma: 0.5 })),
  momentum: sgd(0.1, { momentum: 0.9 }),
  nesterov: sgd(0.1, { momentum: 0.9, nesterov: true }),
  adam: adam(0.05),
  adamw: adamw(cosineDecay(0.05, { decaySteps: 3 }), { weightDecay: 0.1 }),
  yogi: yogi(0.05),
  adagrad: adagrad(0.1),
  rmsprop: rmsprop(0.01),
  clipped: chain(clipByGlobalNorm(0.3), adam(0.05)),
};

/** Two steps of every optimiser at the SERVER along two given gradients. */
const serverSteps = program({ params: atServer(specs), g1: atServer(specs), g2: atServer(specs) }, ({ params, g1, g2 }) =>
  Object.fromEntries(
    Object.entries(serverOptimizers).map(([name, optimizer]: [string, AnyTransformation]) => {
      const [u1, s1] = optimizer.update(g1, optimizer.init(params), params);
      const p1 = applyUpdates(params, u1);
      const [u2, s2] = optimizer.update(g2, s1, p1);
      return [name, { params: applyUpdates(p1, u2), state: s2 }];
    }),
  ),
);

const leaf = (shape: number[], seed: number) => ({ shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(seed * 7 + i * 1.3)) });
const tree = (seed: number) => ({ w: leaf([2, 3], seed), b: leaf([3], seed + 1) });
const serverInputs = { params: tree(1), g1: tree(3), g2: tree(5) };

const clientRound = fedAvgMProgram(tiny, {
  clientOptimizer: (lr) => chain(clipByGlobalNorm(0.5), adamw(warmupCosineDecay(lr, { warmupSteps: 1, decaySteps: 4 }))),
});
const clientInputs = {
  params: { w: leaf([2, 2], 2), b: leaf([2], 4) },
  ...batchInputs(withPaddingBatches(separableCohort([5, 9, 3], 2), 1)),
  lr: 0.05,
  serverLr: 0.8,
  buffer: { w: leaf([2, 2], 6), b: leaf([2], 8) },
};

describe.each(backends)("%s agrees with the reference interpreter", (backend) => {
  test("every optimiser's two steps at the SERVER", async () => {
    const want = interpret(serverSteps.ir, serverInputs as never);
    expect(Object.keys(want)).toEqual(Object.keys(serverOptimizers));
    const got = await toHost(await serverSteps.run(serverInputs as never, { backend }));
    expect(differences(got, want)).toEqual([]);
  });

  test("clients training with clipped, scheduled AdamW inside a FedAvgM round", async () => {
    const want = interpret(clientRound.ir, clientInputs as never);
    const got = await toHost(await clientRound.run(clientInputs as never, { backend }));
    expect(differences(got, want)).toEqual([]);
  });
});
