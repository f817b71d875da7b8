/**
 * bench/fedavg-round: one FedAvg round of the FedAvg paper's 2NN (784-200-200-10), 10 clients
 * x 600 MNIST-shaped examples, E=1, B=20, SGD lr 0.1, timed in one process:
 *   DSL          fedAvgProgram(mlp2nn).run(...) on the chosen backend (default wasm)
 *   hand-best    hand-written tfjs, backward pass by hand, plain 2-D matmuls
 *   hand-naive   hand-written tfjs with tf.grads per step
 * Rounds alternate between the variants and the median of each is reported, with ratios
 * against the baselines (machines here are noisy: compare ratios, not seconds).
 *
 * usage: node dist/bench/fedavg-round.js [--rounds N] [--backend wasm|cpu|tensorflow]
 */
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { activateBackend, requestedBackend } from "../src/runtime/backend.js";
import { bestRound, naiveRound, type Params } from "./fedavg-baselines.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" }, backend: { type: "string" } } });
const rounds = Number(values.rounds);
const backend = await activateBackend(requestedBackend(values.backend));
const [clients, examples, batch, lr] = [10, 600, 20, 0.1];
const steps = examples / batch;

const rng = Rng.fromSeed(0);
const init = mlp2nn.init(rng);
const params0 = Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)])) as Params;
const pixels = new Float32Array(clients * examples * 784).map(() => rng.float());
const labels = new Int32Array(clients * examples).map(() => rng.int(0, 10));
const cohort = {
  x: tf.tensor(pixels, [clients, steps, batch, 784]),
  y: tf.tensor(labels, [clients, steps, batch], "int32"),
  mask: tf.ones([clients, steps, batch]),
  count: tf.fill([clients], examples),
};
const fedavg = fedAvgProgram(mlp2nn);

async function dslRound(): Promise<Params> {
  const out = (await fedavg.run({ params: params0, ...cohort, lr })) as unknown as { params: Params; loss: tf.Tensor };
  out.loss.dispose();
  return out.params as Params;
}

const variants: Record<string, () => Promise<Params> | Params> = {
  dsl: dslRound,
  "hand-best": () => bestRound(params0, cohort, lr),
  "hand-naive": () => naiveRound(params0, cohort, lr),
};

async function timed(f: () => Promise<Params> | Params): Promise<{ ms: number; result: Params }> {
  const start = performance.now();
  const result = await f();
  await Promise.all(Object.values(result).map((t) => t.data()));
  return { ms: performance.now() - start, result };
}

// Warm-up (compilation, kernel initialisation), and a check that all variants agree.
const results: Record<string, Params> = {};
for (const [name, f] of Object.entries(variants)) results[name] = (await timed(f)).result;
const maxDiff = (a: Params, b: Params) =>
  Math.max(...Object.keys(a).map((k) => tf.tidy(() => tf.max(tf.abs(tf.sub(a[k as keyof Params], b[k as keyof Params]))).dataSync()[0]!)));
const agreement = { "dsl vs hand-best": maxDiff(results.dsl!, results["hand-best"]!), "dsl vs hand-naive": maxDiff(results.dsl!, results["hand-naive"]!) };
Object.values(results).forEach((p) => tf.dispose(Object.values(p)));

const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const tensorsBefore = tf.memory().numTensors;
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of Object.entries(variants)) {
    const { ms, result } = await timed(f);
    tf.dispose(Object.values(result));
    times[name]!.push(ms);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const med = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
console.log(`fedavg-round: 2NN, ${clients} clients x ${examples} examples, E=1, B=${batch}, backend ${backend}, ${rounds} rounds each`);
for (const [name, ms] of Object.entries(med)) console.log(`  ${name.padEnd(11)} ${(ms / 1000).toFixed(3)} s/round (median)`);
console.log(`  ratio dsl / hand-best  = ${(med.dsl! / med["hand-best"]!).toFixed(3)}   (target <= 1.05)`);
console.log(`  ratio dsl / hand-naive = ${(med.dsl! / med["hand-naive"]!).toFixed(3)}`);
console.log(`  max |difference| of the new parameters: ${JSON.stringify(agreement)}`);
console.log(`  tensors leaked over the timed rounds: ${tf.memory().numTensors - tensorsBefore}`);
