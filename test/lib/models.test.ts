/**
 * The models: the FedAvg paper's CNN (parameter count, output shapes under map, one FedAvg
 * step that lowers the loss of its batch) and the character model on State of the Union text
 * (int32 inputs, a few FedAvg rounds that lower the held-out loss), and seeded Glorot init.
 */
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, map, program } from "../../src/index.js";
import { evaluationProgram } from "../../src/lib/algorithms/evaluation.js";
import type { AnyModel } from "../../src/lib/algorithms/types.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { CHARACTER_VOCABULARY_SIZE } from "../../src/lib/data/sotu.js";
import { characterModel } from "../../src/lib/models/character.js";
import { lstmModel } from "../../src/lib/models/lstm.js";
import { cnn } from "../../src/lib/models/cnn.js";
import { mlp2nn } from "../../src/lib/models/dense.js";
import { Rng } from "../../src/lib/random.js";
import { read } from "./helpers.js";
import { sotuLossBeforeAndAfter } from "./sotu-rounds.js";
import { deadline } from "../helpers/deadline.js";

const parameterCount = (params: Record<string, { data: Float32Array }>) => Object.values(params).reduce((n, p) => n + p.data.length, 0);

describe("seeded Glorot initialisation", () => {
  test("the same seed gives the same weights, within Glorot's limit; biases start at zero", () => {
    const [a, b] = [cnn.init(Rng.fromSeed(3)), cnn.init(Rng.fromSeed(3))];
    expect(a.conv2.data).toEqual(b.conv2.data);
    expect(cnn.init(Rng.fromSeed(4)).conv2.data).not.toEqual(a.conv2.data);
    // Keras's fans for a 5x5 convolution from 32 to 64 channels: 25 * 32 in, 25 * 64 out.
    const limit = Math.sqrt(6 / (25 * 32 + 25 * 64));
    const largest = a.conv2.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(largest).toBeLessThanOrEqual(limit);
    expect(largest).toBeGreaterThan(0.99 * limit);
    expect(a.bias2.data.every((v) => v === 0)).toBe(true);
    expect(a.dense.shape).toEqual([3136, 512]);
  });
});

describe("the FedAvg paper's CNN", () => {
  test("has the paper's 1,663,370 parameters (the 2NN 199,210)", () => {
    expect(parameterCount(cnn.init(Rng.fromSeed(0)))).toBe(1_663_370);
    expect(parameterCount(mlp2nn.init(Rng.fromSeed(0)))).toBe(199_210);
  });

  const rng = Rng.fromSeed(1);
  const params = cnn.init(rng.fork("init"));
  const [clients, batch] = [2, 4];
  const images = Float32Array.from({ length: clients * batch * 784 }, () => rng.float());
  const labels = Int32Array.from({ length: clients * batch }, (_, i) => i % 10);

  test("gives logits [C, B, 10] for every client's batch of flattened images", async () => {
    const logits = program({ params: atServer(cnn.params), x: atClients(f32(["B", 784])) }, ({ params, x }) =>
      map((p, images) => cnn.logits(p, images), broadcast(params), x),
    );
    expect(logits.signature).toContain("-> {f32[B,10]}@CLIENTS");
    const out = (await read(await logits.run({ params, x: { shape: [clients, batch, 784], data: images } }))) as number[][][];
    expect([out.length, out[0]!.length, out[0]![0]!.length]).toEqual([clients, batch, 10]);
    expect(out.flat(2).every(Number.isFinite)).toBe(true);
  });

  test("one FedAvg step keeps the shapes and lowers the loss on its own batches", async () => {
    const data = {
      x: { shape: [clients, 1, batch, 784], data: images },
      y: { shape: [clients, 1, batch], data: labels },
      mask: { shape: [clients, 1, batch], data: new Float32Array(clients * batch).fill(1) },
      count: { shape: [clients], data: new Float32Array(clients).fill(batch) },
    };
    const out = await fedAvgProgram(cnn).run({ params, ...data, lr: 0.05 });
    expect(Object.fromEntries(Object.entries(out.params).map(([k, t]) => [k, t.shape]))).toEqual(
      Object.fromEntries(Object.entries(params).map(([k, p]) => [k, p.shape])),
    );
    const evaluate = evaluationProgram(cnn);
    // The two clients' batches as one evaluation set of 2 batches.
    const testSet = { x: { ...data.x, shape: [clients, batch, 784] }, y: { ...data.y, shape: [clients, batch] }, mask: { ...data.mask, shape: [clients, batch] } };
    const before = await read(await evaluate.run({ params, ...testSet }));
    const after = await read(await evaluate.run({ params: out.params, ...testSet }));
    const trainingLoss = (await read(out.loss)) as number;
    await read(out.params);
    expect(trainingLoss).toBeCloseTo(before.loss as number, 4); // one step per client: the loss at the start
    expect(after.loss as number).toBeLessThan(before.loss as number);
  });
});

describe("the character model", () => {
  const sequenceLength = 12;
  const model = characterModel({ sequenceLength });

  test("takes int32 windows of character ids", () => {
    expect(fedAvgProgram(model).signature).toContain(`x={i32[S,B,${sequenceLength}]}@CLIENTS`);
    expect(model.classes).toBe(CHARACTER_VOCABULARY_SIZE);
  });

  test("three FedAvg rounds on four presidents lower the held-out loss", async () => {
    const { before, after } = await sotuLossBeforeAndAfter(model, { lr: 0.5 });
    expect(before).toBeGreaterThan(0.9 * Math.log(CHARACTER_VOCABULARY_SIZE));
    expect(after).toBeLessThan(before - 0.5);
  });
});

describe("the character LSTM", () => {
  const sequenceLength = 12;
  const model = lstmModel({ sequenceLength });

  test("takes int32 windows of character ids; its parameters are FedJAX's layers with one LSTM of 128", () => {
    expect(fedAvgProgram(model).signature).toContain(`x={i32[S,B,${sequenceLength}]}@CLIENTS`);
    const shapes = Object.fromEntries(Object.entries(model.init(Rng.fromSeed(0))).map(([k, p]) => [k, p.shape]));
    expect(shapes).toEqual({ embedding: [96, 8], inputKernel: [8, 512], recurrentKernel: [128, 512], bias: [512], out: [128, 96], outBias: [96] });
  });

  test("three FedAvg rounds on four presidents lower the held-out loss", async () => {
    const { before, after } = await sotuLossBeforeAndAfter(model, { lr: 1 });
    expect(before).toBeGreaterThan(0.95 * Math.log(CHARACTER_VOCABULARY_SIZE));
    expect(after).toBeLessThan(before - 0.5);
  }, deadline(60_000));
});
