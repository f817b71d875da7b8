/**
 * bench/fedavg-round: one FedAvg round of the FedAvg paper's 2NN (784-200-200-10), 10 clients
 * x 600 MNIST-shaped examples, E=1, B=20, SGD lr 0.1, timed in one process:
 *   dsl onnx            fedAvgProgram(mlp2nn).run(...) on onnx, clients across worker threads
 *   dsl onnx no workers the same with { workers: 0 }: all on the main thread
 *   dsl wasm            on tfjs wasm, clients across worker threads
 *   dsl wasm no workers on tfjs wasm with { workers: 0 }
 *   hand-best           hand-written tfjs (wasm), backward pass by hand, plain 2-D matmuls
 *   hand-naive          hand-written tfjs (wasm) with tf.grads per step
 *   pytorch             bench/fedavg_round_torch.py on the same data, when python3 has torch
 * Rounds alternate between the variants and the median of each is reported, with ratios
 * (machines here are noisy: compare ratios, not seconds). Both wall time and the process's
 * CPU time (all threads) are measured; on a machine shared with other work the fastest round
 * is the steadiest figure. PyTorch runs in its own process after the others.
 *
 * The agreement line compares the new parameters: over 300 SGD steps, float32 runs that sum
 * their products in different orders part by up to 2e-3 where a ReLU input near 0 changes
 * sign (hand-best on tfjs's cpu kernels differs from hand-best on wasm by the same 1.8e-3 as
 * dsl onnx does); runs with the same kernels agree to 1e-7.
 *
 * usage: node dist/bench/fedavg-round.js [--rounds N]
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";
import { bestRound, naiveRound, type Cohort, type Params, type RoundResult } from "./fedavg-baselines.js";
import { pythonWithTorch, runTorch, type TorchTimes } from "./torch-baseline.js";
import { fastest, maxDiff, median } from "./stats.js";
import { gemmPeak, peakShareLine } from "./gemm-peak.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" } } });
const rounds = Number(values.rounds);
const [clients, examples, batch, lr] = [10, 600, 20, 0.1];
const steps = examples / batch;

const rng = Rng.fromSeed(0);
const init = mlp2nn.init(rng);
const pixels = new Float32Array(clients * examples * 784).map(() => rng.float());
const labels = new Int32Array(clients * examples).map(() => rng.int(0, 10));

interface Inputs {
  readonly params: Params;
  readonly cohort: Cohort & { readonly mask: tf.Tensor };
}

/** The parameters and data as tensors of `backend`'s tfjs backend (onnxruntime reads cpu tensors in place). */
async function inputsOn(backend: BackendName): Promise<Inputs> {
  await useBackend(backend);
  return {
    params: Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)])) as Params,
    cohort: {
      x: tf.tensor(pixels, [clients, steps, batch, 784]),
      y: tf.tensor(labels, [clients, steps, batch], "int32"),
      mask: tf.ones([clients, steps, batch]),
      count: tf.fill([clients], examples),
    },
  };
}
const onCpu = await inputsOn("onnx");
const onWasm = await inputsOn("wasm");
const fedavg = fedAvgProgram(mlp2nn);

interface Variant {
  readonly backend: BackendName;
  run(): Promise<RoundResult> | RoundResult;
}
const dsl = (backend: BackendName, inputs: Inputs, workers?: number): Variant => ({
  backend,
  run: async () => (await fedavg.run({ params: inputs.params, ...inputs.cohort, lr }, { backend, ...(workers === undefined ? {} : { workers }) })) as unknown as RoundResult,
});
const variants: Record<string, Variant> = {
  "dsl onnx": dsl("onnx", onCpu),
  "dsl onnx no workers": dsl("onnx", onCpu, 0),
  "dsl wasm": dsl("wasm", onWasm),
  "dsl wasm no workers": dsl("wasm", onWasm, 0),
  "hand-best": { backend: "wasm", run: () => bestRound(onWasm.params, onWasm.cohort, lr) },
  "hand-naive": { backend: "wasm", run: () => naiveRound(onWasm.params, onWasm.cohort, lr) },
};

async function timed(variant: Variant): Promise<{ ms: number; cpuMs: number; result: RoundResult }> {
  await useBackend(variant.backend);
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  const result = await variant.run();
  await Promise.all([...Object.values(result.params), result.loss].map((t) => t.data()));
  const cpu = process.cpuUsage(cpuStart);
  return { ms: performance.now() - start, cpuMs: (cpu.user + cpu.system) / 1000, result };
}
const disposeResult = (r: RoundResult) => tf.dispose([...Object.values(r.params), r.loss]);
const keys = Object.keys(init) as (keyof Params)[];
const flat = (r: RoundResult): Record<string, Float32Array> => ({
  ...Object.fromEntries(keys.map((k) => [k, r.params[k].dataSync() as Float32Array])),
  loss: r.loss.dataSync() as Float32Array,
});

// Warm-up (compilation, sessions, workers, kernel initialisation), and a check that all variants agree.
const results: Record<string, Record<string, Float32Array>> = {};
for (const [name, variant] of Object.entries(variants)) {
  const { result } = await timed(variant);
  results[name] = flat(result);
  disposeResult(result);
}
const agreement = Object.fromEntries(Object.keys(variants).filter((n) => n !== "hand-best").map((n) => [`${n} vs hand-best`, maxDiff(results[n]!, results["hand-best"]!)]));

const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const cpuTimes: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const tensorsBefore = tf.memory().numTensors;
for (let r = 0; r < rounds; r++) {
  for (const [name, variant] of Object.entries(variants)) {
    const { ms, cpuMs, result } = await timed(variant);
    disposeResult(result);
    times[name]!.push(ms);
    cpuTimes[name]!.push(cpuMs);
  }
}
const leaked = tf.memory().numTensors - tensorsBefore;

const python = pythonWithTorch();
let torch: TorchTimes | undefined;
if (python !== undefined) {
  const arrays = {
    ...Object.fromEntries(keys.map((k) => [k, { data: init[k].data as Float32Array, shape: init[k].shape }])),
    x: { data: pixels, shape: [clients, steps, batch, 784] },
    y: { data: labels, shape: [clients, steps, batch] },
    count: { data: new Float32Array(clients).fill(examples), shape: [clients] },
  };
  torch = runTorch(python, arrays, lr, rounds);
  agreement["pytorch vs dsl onnx"] = maxDiff(torch.result, results["dsl onnx"]!);
}

const med: Record<string, number> = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
const cpu: Record<string, number> = Object.fromEntries(Object.entries(cpuTimes).map(([k, v]) => [k, median(v)]));
const best: Record<string, number> = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, fastest(v)]));
if (torch !== undefined) [med.pytorch, best.pytorch] = [median(torch.seconds) * 1000, fastest(torch.seconds) * 1000];

const seconds = (ms: number | undefined) => (ms === undefined ? "    -" : (ms / 1000).toFixed(3));
console.log(`fedavg-round: 2NN, ${clients} clients x ${examples} examples, E=1, B=${batch}, ${rounds} rounds each, ${availableParallelism()} cores`);
console.log(`  ${"variant".padEnd(20)} s/round: wall (median)  cpu (median)  wall (fastest)`);
for (const name of [...Object.keys(variants), ...(torch === undefined ? [] : ["pytorch"])]) {
  console.log(`  ${name.padEnd(20)}          ${seconds(med[name])}         ${seconds(cpu[name])}          ${seconds(best[name])}`);
}
if (torch === undefined) console.log("  pytorch            PyTorch not available (no python3 that imports torch; Debian: apt-get install python3-torch)");
else console.log(`  (pytorch ${torch.version} with ${python}, BLAS on one thread)`);

const ratio = (a: string, b: string, target = "") => {
  if (med[a] === undefined || med[b] === undefined) return;
  console.log(`  ratio ${`${a} / ${b}`.padEnd(36)} = ${(med[a]! / med[b]!).toFixed(3)} wall (median), ${(best[a]! / best[b]!).toFixed(3)} wall (fastest)${target}`);
};
ratio("dsl onnx", "pytorch");
ratio("dsl onnx", "dsl wasm");
ratio("dsl onnx", "hand-best");
ratio("dsl wasm", "hand-best");
ratio("dsl wasm no workers", "hand-best", "   (target <= 1.05)");
ratio("dsl onnx", "dsl onnx no workers", "   (worker threads on / off)");
ratio("dsl wasm", "dsl wasm no workers", "   (worker threads on / off)");
console.log(`  max |difference| of the new parameters and loss: ${JSON.stringify(agreement)}`);
console.log(`  tensors leaked over the timed rounds: ${leaked}`);
// The products' arithmetic of a round: each example's three layers forward, and backward both
// gradients of each layer but the first, whose input needs none.
const layers: [number, number][] = [[784, 200], [200, 200], [200, 10]];
const exampleMacs = layers.reduce((sum, [i, o]) => sum + i * o, 0);
const roundFlops = 2 * clients * examples * (3 * exampleMacs - layers[0]![0] * layers[0]![1]);
console.log(peakShareLine(`dsl onnx (${(roundFlops / 1e9).toFixed(1)} GFLOP a round)`, roundFlops, best["dsl onnx"]!, await gemmPeak(), 0.85));
