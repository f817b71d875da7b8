/**
 * bench/cnn-round: one FedAvg round of the FedAvg paper's CNN (src/lib/models/cnn.ts: two 5x5
 * convolutions of 32 and 64 channels with 2x2 max pooling, dense 512, softmax 10), 10 clients
 * x 600 MNIST-shaped examples, E=1, B=20, SGD lr 0.1, against PyTorch in child processes:
 *   dsl onnx              fedAvgProgram(cnn).run(...) on onnx (the default backend), clients
 *                         across worker threads
 *   dsl onnx no workers   the same with { workers: 0 }
 *   dsl wasm              on tfjs wasm, clients across worker threads (--wasm to include it:
 *                         a round takes minutes there)
 *   pytorch sequential    bench/fedavg_round_torch.py, clients one after another, autograd
 *   pytorch vmap          the same round with the clients batched by functorch's vmap(grad)
 * PyTorch runs on each of `--torch-threads` (2, the machine's cores, by default; a list such as
 * 1,2 tries each: on a loaded machine OpenMP's 2 threads can lose to 1), from the same initial
 * parameters and data; the fastest of its forms is the baseline. Rounds alternate between the FedTensor variants; each PyTorch
 * form runs its rounds in its own process after them. Reported: the median and fastest round
 * of each, the ratios to PyTorch's faster form, the achieved GFLOP/s (the round's multiply-adds
 * counted below, times two) and how far the new parameters of each variant are from PyTorch's.
 *
 * usage: node dist/bench/cnn-round.js [--rounds N] [--wasm] [--torch-threads 1,2] [--torch-forms sequential,vmap]
 *   (--torch-forms '' runs no PyTorch: for profiling, with FEDTENSOR_ONNX_PROFILE, docs/runtime.md)
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { cnn } from "../src/lib/models/cnn.js";
import { Rng } from "../src/lib/random.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";
import { pythonWithTorch, runTorch, type TorchScript, type TorchTimes } from "./torch-baseline.js";
import { fastest, maxDiff, median } from "./stats.js";
import { gemmPeak, peakShareLine } from "./gemm-peak.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    wasm: { type: "boolean", default: false },
    "torch-threads": { type: "string", default: "2" },
    "torch-forms": { type: "string", default: "sequential,vmap" },
  },
});
const rounds = Number(values.rounds);
const [clients, examples, batch, lr] = [10, 600, 20, 0.1];
const steps = examples / batch;

/**
 * Floating-point operations of one round: per example, the forward pass's multiply-adds, twice
 * that backward (the input's and the weights' gradients) less the input gradient of the first
 * convolution, which nothing needs; two FLOPs per multiply-add. Pooling, ReLU, biases, softmax
 * and the SGD updates are elementwise and under 1% of it.
 */
const conv1 = 28 * 28 * 32 * 5 * 5 * 1;
const conv2 = 14 * 14 * 64 * 5 * 5 * 32;
const dense = 3136 * 512 + 512 * 10;
const roundFlops = 2 * clients * examples * (conv1 + conv2 + dense + (conv1 + 2 * conv2 + 2 * dense));

/**
 * How far two runs' new parameters and loss may part: float32 runs that sum in different
 * orders over 30 SGD steps differ by up to 5e-3 here (PyTorch's two forms from each other
 * included), where a ReLU input or a pooling window's maximum near a tie flips.
 */
const TOLERANCE = 1e-2;

const rng = Rng.fromSeed(0);
const init = cnn.init(rng);
const keys = Object.keys(init) as (keyof typeof init)[];
const pixels = new Float32Array(clients * examples * 784).map(() => rng.float());
const labels = new Int32Array(clients * examples).map(() => rng.int(0, 10));

type Params = Record<keyof typeof init, tf.Tensor>;
interface RoundResult {
  readonly params: Params;
  readonly loss: tf.Tensor;
}
interface Inputs {
  readonly params: Params;
  readonly x: tf.Tensor;
  readonly y: tf.Tensor;
  readonly mask: tf.Tensor;
  readonly count: tf.Tensor;
}

/** The parameters and data as tensors of `backend`'s tfjs backend (onnxruntime reads cpu tensors in place). */
async function inputsOn(backend: BackendName): Promise<Inputs> {
  await useBackend(backend);
  return {
    params: Object.fromEntries(keys.map((k) => [k, tf.tensor(init[k].data, init[k].shape)])) as Params,
    x: tf.tensor(pixels, [clients, steps, batch, 784]),
    y: tf.tensor(labels, [clients, steps, batch], "int32"),
    mask: tf.ones([clients, steps, batch]),
    count: tf.fill([clients], examples),
  };
}
const fedavg = fedAvgProgram(cnn);

interface Variant {
  readonly backend: BackendName;
  readonly inputs: Inputs;
  readonly workers?: number;
}
const onCpu = await inputsOn("onnx");
const variants: Record<string, Variant> = {
  "dsl onnx": { backend: "onnx", inputs: onCpu },
  "dsl onnx no workers": { backend: "onnx", inputs: onCpu, workers: 0 },
  ...(values.wasm ? { "dsl wasm": { backend: "wasm", inputs: await inputsOn("wasm") } } : {}),
};

async function timed({ backend, inputs, workers }: Variant): Promise<{ ms: number; result: Record<string, Float32Array> }> {
  await useBackend(backend);
  const start = performance.now();
  const { params, ...data } = inputs;
  const result = (await fedavg.run({ params, ...data, lr }, { backend, ...(workers === undefined ? {} : { workers }) })) as unknown as RoundResult;
  const flat = Object.fromEntries(await Promise.all([...keys.map(async (k) => [k, (await result.params[k].data()) as Float32Array] as const), ["loss", (await result.loss.data()) as Float32Array] as const]));
  const ms = performance.now() - start;
  tf.dispose([...Object.values(result.params), result.loss]);
  return { ms, result: flat };
}

// Warm-up: compilation, sessions, workers, kernel initialisation.
const results: Record<string, Record<string, Float32Array>> = {};
for (const [name, variant] of Object.entries(variants)) results[name] = (await timed(variant)).result;

const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const tensorsBefore = tf.memory().numTensors;
for (let r = 0; r < rounds; r++) {
  for (const [name, variant] of Object.entries(variants)) times[name]!.push((await timed(variant)).ms);
}
const leaked = tf.memory().numTensors - tensorsBefore;

const python = pythonWithTorch();
const torchRuns: Record<string, TorchTimes> = {};
if (python !== undefined) {
  const arrays = {
    ...Object.fromEntries(keys.map((k) => [k, { data: init[k].data, shape: init[k].shape }])),
    x: { data: pixels, shape: [clients, steps, batch, 784] },
    y: { data: labels, shape: [clients, steps, batch] },
    count: { data: new Float32Array(clients).fill(examples), shape: [clients] },
  };
  for (const threads of values["torch-threads"].split(",").map(Number)) {
    for (const form of values["torch-forms"].split(",").filter(Boolean)) {
      const name = `pytorch ${form} ${threads}t`;
      const script: TorchScript = {
        file: "fedavg_round_torch.py",
        outputs: [...keys, "loss"],
        threads,
        // Passive OpenMP waits, as bench/lstm-round.ts: spinning threads lose most on a shared machine.
        env: { OMP_NUM_THREADS: String(threads), OMP_WAIT_POLICY: "PASSIVE" },
        meta: { model: "cnn", keys, form },
      };
      const run = runTorch(python, arrays, lr, rounds, script);
      torchRuns[name] = run;
      times[name] = run.seconds.map((s) => s * 1000);
      results[name] = run.result;
    }
  }
}

const med = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
const best = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, fastest(v)]));
const torchNames = Object.keys(torchRuns);
const fastestTorch = torchNames.length === 0 ? undefined : torchNames.reduce((a, b) => (best[a]! <= best[b]! ? a : b));

console.log(`cnn-round: CNN (${(roundFlops / 1e9).toFixed(0)} GFLOP a round), ${clients} clients x ${examples} examples, E=1, B=${batch}, ${rounds} rounds each, ${availableParallelism()} cores`);
console.log(`  ${"variant".padEnd(20)} s/round: wall (median)  wall (fastest)   GFLOP/s (fastest)`);
for (const name of Object.keys(times)) {
  const gflops = roundFlops / (best[name]! / 1000) / 1e9;
  console.log(`  ${name.padEnd(20)}          ${(med[name]! / 1000).toFixed(2).padStart(6)}          ${(best[name]! / 1000).toFixed(2).padStart(6)}    ${gflops.toFixed(1).padStart(8)}`);
}
if (python === undefined) console.log("  pytorch              not available (no python3 that imports torch; Debian: apt-get install python3-torch)");
else if (fastestTorch !== undefined) console.log(`  (pytorch ${torchRuns[fastestTorch]!.version} with ${python}; "2t": on 2 threads; fastest: ${fastestTorch})`);

const ratio = (a: string, b: string | undefined, note = "") => {
  if (b === undefined || med[a] === undefined || med[b] === undefined) return;
  console.log(`  ratio ${`${a} / ${b}`.padEnd(42)} = ${(med[a]! / med[b]!).toFixed(3)} wall (median), ${(best[a]! / best[b]!).toFixed(3)} wall (fastest)${note}`);
};
ratio("dsl onnx", fastestTorch, "   (target <= 0.8)");
for (const name of torchNames.filter((n) => n !== fastestTorch)) ratio("dsl onnx", name);
for (const name of torchNames.slice(1)) ratio(name, torchNames[0]);
ratio("dsl onnx", "dsl onnx no workers", "   (worker threads on / off)");
ratio("dsl wasm", "dsl onnx");
const reference = fastestTorch ?? "dsl onnx no workers";
const agreement = Object.fromEntries(Object.keys(results).filter((n) => n !== reference).map((n) => [`${n} vs ${reference}`, Number(maxDiff(results[n]!, results[reference]!).toExponential(2))]));
console.log(`  max |difference| of the new parameters and loss: ${JSON.stringify(agreement)}`);
const disagreeing = Object.entries(agreement).filter(([, d]) => !(d <= TOLERANCE));
console.log(`  agreement within ${TOLERANCE}: ${disagreeing.length === 0 ? "yes" : `NO (${disagreeing.map(([n]) => n).join(", ")})`}`);
if (disagreeing.length > 0) process.exitCode = 1;
console.log(`  tensors leaked over the timed rounds: ${leaked}`);
console.log(peakShareLine("dsl onnx", roundFlops, best["dsl onnx"]!, await gemmPeak(), 0.85));
