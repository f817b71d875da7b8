/**
 * FedAvg with the robust aggregator chains (src/lib/aggregators): with no attacker it is
 * FedAvg; a sign-flip with scale 1 by every client moves the model back by FedAvg's step; the
 * median of three clients with one attacker ignores the attacker; and it runs alike on cpu
 * and onnx.
 */
import * as tf from "@tensorflow/tfjs";
import { expect, test } from "vitest";
import { fedAvgProgram } from "../../src/lib/algorithms/fedavg.js";
import { aggregatorOf } from "../../src/lib/aggregators/aggregator.js";
import type { Stage } from "../../src/lib/aggregators/stages.js";
import { batchInputs, separableCohort, tiny } from "./helpers.js";
import { deadline } from "../helpers/deadline.js";

const data = () => batchInputs(separableCohort([8, 8, 8], 4));
const params = () => ({ w: tf.fill([2, 2], 0.1), b: tf.zeros([2]) });

async function weights(chain: Stage[], malicious: number[], attackScale = 1, backend = "onnx"): Promise<number[]> {
  const round = fedAvgProgram(tiny, { aggregator: aggregatorOf(chain) }) as unknown as { run(inputs: object, options: object): Promise<{ params: { w: tf.Tensor; b: tf.Tensor }; loss: tf.Tensor }> };
  const out = await round.run({ params: params(), ...data(), lr: 0.1, malicious, attackScale, key: [0, 1], round: 1 }, { backend });
  const w = Array.from(await out.params.w.data());
  tf.dispose([out.params.w, out.params.b, out.loss]);
  return w;
}

test("without attackers the round is FedAvg's; every client sign-flipping moves the model back by FedAvg's step", async () => {
  const fedavg = await fedAvgProgram(tiny).run({ params: params(), ...data(), lr: 0.1 });
  const expected = Array.from(await fedavg.params.w.data());
  tf.dispose([fedavg.params.w, fedavg.params.b, fedavg.loss]);
  const clean = await weights([{ kind: "attack", attack: "sign-flip" }], [0, 0, 0]);
  clean.forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 5));
  const flipped = await weights([{ kind: "attack", attack: "sign-flip" }], [1, 1, 1]);
  flipped.forEach((v, i) => expect(v - 0.1).toBeCloseTo(-(expected[i]! - 0.1), 5));
}, deadline(60_000));

test("the median of three clients is unmoved by one attacker scaling its update 1000x, the mean is not", async () => {
  const honest = await weights([{ kind: "attack", attack: "scale" }, { kind: "median" }], [0, 0, 0]);
  const attacked = await weights([{ kind: "attack", attack: "scale" }, { kind: "median" }], [0, 1, 0], 1000);
  const mean = await weights([{ kind: "attack", attack: "scale" }], [0, 1, 0], 1000);
  // Each coordinate's median now lies between the two honest clients' values: near the honest median.
  const spread = Math.max(...honest.map((v) => Math.abs(v - 0.1)));
  attacked.forEach((v, i) => expect(Math.abs(v - honest[i]!)).toBeLessThanOrEqual(2 * spread + 1e-6));
  expect(Math.max(...mean.map((v) => Math.abs(v - 0.1)))).toBeGreaterThan(100 * spread);
}, deadline(60_000));

test("Krum with noise attackers and quantized updates gives the same round on cpu and onnx", async () => {
  const options: Stage[] = [{ kind: "attack", attack: "noise" }, { kind: "quantize", bits: 3, rotation: false }, { kind: "krum", byzantine: 0, select: 1 }];
  const [cpu, onnx] = [await weights(options, [1, 0, 0], 5, "cpu"), await weights(options, [1, 0, 0], 5, "onnx")];
  cpu.forEach((v, i) => expect(v).toBeCloseTo(onnx[i]!, 5));
  // The noisy client (std 5) is never Krum's choice: the update stays small.
  expect(Math.max(...onnx.map((v) => Math.abs(v - 0.1)))).toBeLessThan(1);
}, deadline(60_000));
