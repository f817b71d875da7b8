/**
 * bench/secure-sum: what secure aggregation costs, timed in one process, as ratios against the
 * plain sum run alongside (machines here are noisy: compare ratios, not seconds).
 *
 * 1. One FedAvg round of the 2NN (784-200-200-10), 10 clients x 600 MNIST-shaped examples,
 *    B=20, lr 0.1, on onnx: fedAvgProgram with the mean against the chain secure (30 bits,
 *    clip 1, all pairs, and a 2-neighbour SecAgg+ graph).
 * 2. The sum alone of f32[10000] per client over n clients on onnx: reduceSum against
 *    secureSum with all pairs (n floor(n/2) mask words per coordinate) and with 4 neighbours
 *    (2n): the O(n^2) against O(n k) growth behind docs/language.md's mask-graph choice.
 * Variants alternate and the median of each is reported.
 *
 * usage: node dist/bench/secure-sum.js [--rounds N]
 */
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { atClients, atServer, f32, i32, program, reduceSum, secureSum } from "../src/index.js";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { aggregator } from "../src/lib/aggregators/aggregator.js";
import { aggregationStages } from "../src/lib/aggregators/stages.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { useBackend } from "../src/runtime/backend.js";
import { median } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" } } });
const rounds = Number(values.rounds);
await useBackend("onnx");

/** Median seconds of each variant over `rounds` alternating runs (after one warm-up run each). */
async function timeAll(variants: Record<string, () => Promise<tf.TensorContainer>>): Promise<Record<string, number>> {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = -1; r < rounds; r++) {
    for (const [name, run] of Object.entries(variants)) {
      const start = performance.now();
      tf.dispose(await run());
      if (r >= 0) times[name]!.push((performance.now() - start) / 1000);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
}

function report(title: string, times: Record<string, number>, baseline: string): void {
  console.log(title);
  for (const [name, s] of Object.entries(times)) console.log(`  ${name.padEnd(28)} ${s.toFixed(3)} s  x${(s / times[baseline]!).toFixed(2)}`);
}

// 1. A FedAvg round.
const [clients, examples, batch, lr] = [10, 600, 20, 0.1];
const rng = Rng.fromSeed(0);
const params = Object.fromEntries(Object.entries(mlp2nn.init(rng)).map(([k, v]) => [k, tf.tensor(v.data, v.shape)]));
const cohort = {
  x: tf.tensor(new Float32Array(clients * examples * 784).map(() => rng.float()), [clients, examples / batch, batch, 784]),
  y: tf.tensor(new Int32Array(clients * examples).map(() => rng.int(0, 10)), [clients, examples / batch, batch], "int32"),
  mask: tf.ones([clients, examples / batch, batch]),
  count: tf.fill([clients], examples),
};
const secureOptions = { bits: 30, clip: 1, maxWeight: examples, maxClients: clients };
const plainRound = fedAvgProgram(mlp2nn);
const secureRound = fedAvgProgram(mlp2nn, { aggregator: aggregator(aggregationStages.secure(secureOptions)) });
const ringRound = fedAvgProgram(mlp2nn, { aggregator: aggregator(aggregationStages.secure({ ...secureOptions, neighbours: 2 })) });
const roundInputs = { params, ...cohort, lr };
const secureInputs = { ...roundInputs, key: [0, 1], round: 1 };
report(
  `FedAvg round, 2NN, ${clients} clients x ${examples} examples, onnx (median of ${rounds})`,
  await timeAll({
    "plain fedavg": async () => (await plainRound.run(roundInputs as never)) as never,
    "secure, all pairs": async () => (await secureRound.run(secureInputs as never)) as never,
    "secure, 2 neighbours": async () => (await ringRound.run(secureInputs as never)) as never,
  }),
  "plain fedavg",
);

// 2. The sum alone, as the cohort grows.
const size = 10_000;
const specs = { key: atServer(i32([2])), x: atClients(f32([size])) };
const plainSum = program(specs, ({ x }) => reduceSum(x));
const allSum = program(specs, ({ key, x }) => secureSum(x, { bits: 30, key, range: [-1, 1], scale: 1000 }));
const ringSum = program(specs, ({ key, x }) => secureSum(x, { bits: 30, key, range: [-1, 1], scale: 1000, neighbours: 4 }));
for (const n of [10, 40, 160]) {
  const inputs = { key: [0, 1], x: tf.randomUniform([n, size], -1, 1) };
  report(
    `sum of f32[${size}] over ${n} clients, onnx (median of ${rounds})`,
    await timeAll({
      reduceSum: async () => (await plainSum.run(inputs as never)) as never,
      "secureSum, all pairs": async () => (await allSum.run(inputs as never)) as never,
      "secureSum, 4 neighbours": async () => (await ringSum.run(inputs as never)) as never,
    }),
    "reduceSum",
  );
  inputs.x.dispose();
}
