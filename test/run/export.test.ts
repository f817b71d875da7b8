/**
 * `fedtensor export`: the ONNX inference graph of a trained model, run by a plain
 * onnxruntime-node session (no FedTensor in between), predicts what the library predicts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { describe, expect, test } from "vitest";
import { main } from "../../src/cli/main.js";
import type { AnyModel } from "../../src/lib/algorithms/types.js";
import { loadMnist } from "../../src/lib/data/mnist.js";
import { loadSotuCharacters } from "../../src/lib/data/sotu.js";
import { Rng } from "../../src/lib/random.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { inferenceModel, logitsProgram } from "../../src/lib/run/export.js";
import { models } from "../../src/lib/run/setup.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const quiet = { write: () => true, isTTY: false };

/** The library's logits for `x`, on tfjs's cpu backend (a different engine from onnxruntime). */
async function libraryLogits(model: AnyModel, params: unknown, x: Float32Array | Int32Array, batch: number): Promise<Float32Array> {
  const out = await logitsProgram(model).run({ params, x: { shape: [batch, ...model.inputShape], data: x } } as never, { backend: "cpu" });
  const logits = (out as { logits: { data(): Promise<Float32Array>; dispose(): void } }).logits;
  const values = await logits.data();
  logits.dispose();
  return values;
}

async function onnxLogits(bytes: Uint8Array, x: Float32Array | Int32Array, shape: number[]): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes);
  expect(session.inputNames).toEqual(["x"]);
  expect(session.outputNames).toEqual(["logits"]);
  const result = await session.run({ x: new ort.Tensor(x instanceof Int32Array ? "int32" : "float32", x, shape) });
  await session.release();
  return result.logits!.data as Float32Array;
}

const argmaxRows = (logits: Float32Array, classes: number): number[] =>
  Array.from({ length: logits.length / classes }, (_, row) => {
    const slice = logits.subarray(row * classes, (row + 1) * classes);
    return slice.indexOf(Math.max(...slice));
  });

function expectSamePredictions(onnx: Float32Array, library: Float32Array, classes: number): void {
  expect(onnx.length).toBe(library.length);
  expect(argmaxRows(onnx, classes)).toEqual(argmaxRows(library, classes));
  const scale = Math.max(1, ...library.map(Math.abs));
  for (let i = 0; i < onnx.length; i++) expect(Math.abs(onnx[i]! - library[i]!)).toBeLessThan(1e-4 * scale);
}

describe("fedtensor export --onnx", () => {
  test("a trained 2NN's exported graph predicts the MNIST test images as the library does", async () => {
    const out = tempDir("ft-export-");
    const config = validateRunConfig({ model: "2nn", clients: 20, clientsPerRound: 4, batchSize: 50, rounds: 2, checkpointEvery: 1, out }, "test");
    const result = await train(config, quiet);
    const onnxPath = join(out, "model.onnx");
    const batch = 64;
    expect(await main(["export", out, "--onnx", onnxPath, "--batch-size", String(batch)])).toBe(0);

    const test_ = loadMnist("test");
    const x = test_.x.slice(0, batch * 784);
    const onnx = await onnxLogits(new Uint8Array(readFileSync(onnxPath)), x, [batch, 784]);
    const params = (await loadLatestCheckpoint(out))!.checkpoint.serverState as { params: unknown };
    expectSamePredictions(onnx, await libraryLogits(models["2nn"]!, params.params, x, batch), 10);
    // The exported model is the trained one: about as accurate as the run's evaluation said.
    const hits = argmaxRows(onnx, 10).filter((label, i) => label === test_.y[i]).length;
    expect(hits / batch).toBeGreaterThan(result.accuracy! - 0.15);
  }, deadline(120_000));

  test.each(["logistic", "cnn", "char", "transformer"])("model %s exports a graph that agrees with the library", async (name) => {
    const model = models[name]!;
    const params = model.init(Rng.fromSeed(3).fork("init"));
    const batch = 5;
    const source = name === "char" || name === "transformer" ? loadSotuCharacters().test : loadMnist("test");
    const size = model.inputShape.reduce((a: number, b: number) => a * b, 1);
    const x = source.x.slice(0, batch * size);
    const exported = inferenceModel(model, params, batch);
    expect(exported.input.shape).toEqual([batch, ...model.inputShape]);
    const onnx = await onnxLogits(exported.bytes, x, [batch, ...model.inputShape]);
    expectSamePredictions(onnx, await libraryLogits(model, params, x, batch), model.classes);
  }, deadline(120_000));

  test("without --batch-size, a dense model takes any batch size; a model whose graph holds it takes batch 1", async () => {
    const mnist = loadMnist("test");
    const dense = models["2nn"]!;
    const params = dense.init(Rng.fromSeed(4).fork("init"));
    const exported = inferenceModel(dense, params);
    expect(exported.input.shape).toEqual(["N", 784]);
    expect(exported.output.shape).toEqual(["N", 10]);
    for (const batch of [1, 37]) {
      const x = mnist.x.slice(0, batch * 784);
      expectSamePredictions(await onnxLogits(exported.bytes, x, [batch, 784]), await libraryLogits(dense, params, x, batch), 10);
    }
    const cnn = models.cnn!;
    expect(inferenceModel(cnn, cnn.init(Rng.fromSeed(4))).input.shape).toEqual([1, ...cnn.inputShape]);
  }, deadline(120_000));

  test("names what is wrong: no checkpoint, no --onnx, a parameter of the wrong shape", async () => {
    const empty = tempDir("ft-export-empty-");
    await expect(main(["export", empty, "--onnx", join(empty, "m.onnx")])).resolves.toBe(1);
    await expect(main(["export", empty])).resolves.toBe(2);
    const params = models.logistic!.init(Rng.fromSeed(0));
    const [key] = Object.keys(params);
    const bad = { ...params, [key!]: { shape: [3], data: new Float32Array(3) } };
    expect(() => inferenceModel(models.logistic!, bad, 1)).toThrow(/^FT302: model params\.\w+: shape \[3\] where model logistic has/);
  });
});
