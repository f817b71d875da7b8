import * as tf from "@tensorflow/tfjs";
import { expect, test } from "vitest";
import { add, atServer, constant, f32, matmul, mul, program } from "../../src/index.js";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { defineModel } from "../../src/lib/models/model.js";
import { deadline } from "../helpers/deadline.js";

/** A small softmax regression: 4 features, 3 classes. */
const tiny = defineModel<{ w: ReturnType<typeof f32<[4, 3]>>; b: ReturnType<typeof f32<[3]>> }, [4], 3>({
  name: "tiny",
  params: { w: f32([4, 3]), b: f32([3]) },
  inputShape: [4],
  classes: 3,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: () => ({ w: { shape: [4, 3], data: new Float32Array(12) }, b: { shape: [3], data: new Float32Array(3) } }),
});

test("1,000 FedAvg rounds leave tf.memory().numTensors unchanged", async () => {
  const round = fedAvgProgram(tiny);
  const [clients, steps, batch] = [3, 2, 4];
  const data = {
    x: tf.randomNormal([clients, steps, batch, 4], 0, 1, "float32", 7),
    y: tf.tensor(Array.from({ length: clients * steps * batch }, (_, i) => i % 3), [clients, steps, batch], "int32"),
    mask: tf.ones([clients, steps, batch]),
    count: tf.tensor([8, 8, 8]),
  };
  let params = { w: tf.zeros([4, 3]), b: tf.zeros([3]) };
  const advance = async () => {
    const out = await round.run({ params, ...data, lr: 0.1 });
    tf.dispose([...Object.values(params), out.loss]);
    params = out.params;
  };
  await advance(); // compiles and makes the program's constants once
  const before = tf.memory().numTensors;
  for (let r = 0; r < 1000; r++) await advance();
  expect(tf.memory().numTensors).toBe(before);
  const w = await params.w.array();
  expect((w as number[][]).flat().every(Number.isFinite)).toBe(true);
  tf.dispose([...Object.values(params), ...Object.values(data)]);
}, deadline(120_000));

// On the TensorFlow.js backends constants are tfjs tensors (on onnx they live in the session).
test("a program's compiled constants are freed by dispose(), and it still runs afterwards", async () => {
  const before = tf.memory().numTensors;
  const scaled = program({ x: atServer(f32([3])) }, ({ x }) => add(mul(x, constant([1, 2, 3])), 1));
  const first = await scaled.run({ x: [1, 1, 1] }, { backend: "wasm" });
  expect(await first.array()).toEqual([2, 3, 4]);
  first.dispose();
  expect(tf.memory().numTensors).toBeGreaterThan(before); // the compiled constants
  await scaled.dispose();
  expect(tf.memory().numTensors).toBe(before);
  const again = await scaled.run({ x: [2, 2, 2] }, { backend: "wasm" });
  expect(await again.array()).toEqual([3, 5, 7]);
  again.dispose();
  await scaled.dispose();
  expect(tf.memory().numTensors).toBe(before);
});
