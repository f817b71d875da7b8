/**
 * Client loops shared out between the main thread and worker threads (src/runtime/shards.ts).
 * Workers run the compiled worker script, so these tests use the compiled library in dist/
 * (npm test builds it first); from TypeScript sources, as in the other tests, programs run
 * without workers.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import type * as FedTensor from "../../src/index.js";
import type { RoundProgram } from "../../src/lib/algorithms/types.js";
import { differences, toHost } from "../differential/compare.js";

const dist = "../../dist/src";
const ft = (await import(`${dist}/index.js`)) as typeof FedTensor;
const { fedAvgProgram } = (await import(`${dist}/lib/algorithms/fedavg.js`)) as { fedAvgProgram: (model: unknown) => RoundProgram<never> };
const { logistic } = (await import(`${dist}/lib/models/dense.js`)) as { logistic: unknown };

/** Entries in [-1, 1] from a simple generator: the same data on every path. */
const entries = (size: number, seed: number) => Array.from({ length: size }, (_, i) => Math.sin(i * 12.9898 + seed * 78.233) % 1);

// Five clients: the main thread takes three, the worker two.
const clients = 5;
const [steps, batch] = [2, 4];
const round = fedAvgProgram(logistic);
const roundInputs = {
  params: { w: { shape: [784, 10], data: entries(7840, 1).map((v) => v / 10) }, b: { shape: [10], data: entries(10, 2) } },
  x: { shape: [clients, steps, batch, 784], data: entries(clients * steps * batch * 784, 3) },
  y: { shape: [clients, steps, batch], data: Array.from({ length: clients * steps * batch }, (_, i) => i % 10) },
  mask: { shape: [clients, steps, batch], data: Array.from({ length: clients * steps * batch }, (_, i) => (i % 7 === 6 ? 0 : 1)) },
  count: { shape: [clients], data: [8, 7, 7, 7, 6] },
  lr: 0.1,
};

// Per-client weights times per-client data: a client loop, whose per-client results are the output.
const perClient = ft.program({ w: ft.atClients(ft.f32([3, 2])), x: ft.atClients(ft.f32([4, 3])) }, ({ w, x }) =>
  ft.map((wm, xm) => ft.relu(ft.matmul(xm, wm)), w, x),
);
const perClientInputs = { w: { shape: [clients, 3, 2], data: entries(clients * 6, 4) }, x: { shape: [clients, 4, 3], data: entries(clients * 12, 5) } };

async function outputs(p: { run(inputs: never, options: object): Promise<unknown> }, inputs: unknown, options: object) {
  const out = await p.run(inputs as never, options);
  try {
    return await toHost(out);
  } finally {
    tf.dispose(out as tf.TensorContainer);
  }
}

describe.each(["onnx", "wasm"])("on %s, with a worker", (backend) => {
  test("a FedAvg round agrees with the reference interpreter and with no workers", async () => {
    const reference = ft.interpret(round.ir, roundInputs as never);
    const shared = await outputs(round, roundInputs, { backend, workers: 1 });
    expect(differences(shared, reference)).toEqual([]);
    expect(differences(shared, await outputs(round, roundInputs, { backend, workers: 0 }))).toEqual([]);
  });

  test("per-client outputs are joined in client order, and a run leaves only its outputs", async () => {
    const reference = ft.interpret(perClient.ir, perClientInputs as never);
    expect(differences(await outputs(perClient, perClientInputs, { backend, workers: 1 }), reference)).toEqual([]);
    const before = tf.memory().numTensors;
    const out = await perClient.run(perClientInputs as never, { backend, workers: 1 });
    expect(tf.memory().numTensors).toBe(before + 1);
    out.dispose();
  });
});

test("a number of workers that is not a whole number is FT305", async () => {
  await expect(perClient.run(perClientInputs as never, { backend: "onnx", workers: -1 })).rejects.toThrow(
    "FT305: workers: expected a whole number of worker threads, got -1",
  );
});
