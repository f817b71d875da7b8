/**
 * bench/lstm-round: one FedAvg round of the character LSTM (src/lib/models/lstm.ts) on State
 * of the Union windows: 10 presidents (the first ten clients of loadSotuCharacters), each
 * `--steps` SGD steps of B=8 windows of 80 characters, lr 0.5, timed in one process:
 *   dsl onnx            fedAvgProgram(lstmModel()).run(...) on onnx (the default backend)
 *   dsl onnx no workers the same with { workers: 0 }: all on the main thread
 *   pytorch             bench/lstm_round_torch.py on the same data and weights, 2 threads,
 *                       in a child process after the others: the faster of its two forms,
 *                       nn.LSTM per client or all clients batched (both printed)
 * Rounds alternate between the dsl variants and the median of each is reported, with ratios
 * (machines here are noisy: compare ratios, not seconds), and the largest difference of the
 * new parameters and loss between the variants and PyTorch.
 *
 * usage: node dist/bench/lstm-round.js [--rounds N] [--steps S] [--hidden H]
 */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { loadSotuCharacters } from "../src/lib/data/sotu.js";
import { lstmModel } from "../src/lib/models/lstm.js";
import { Rng } from "../src/lib/random.js";
import { useBackend } from "../src/runtime/backend.js";
import { pythonWithTorch, runTorch, type TorchTimes } from "./torch-baseline.js";
import { fastest, maxDiff, median } from "./stats.js";
import { gemmPeak, peakShareLine } from "./gemm-peak.js";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, steps: { type: "string", default: "10" }, hidden: { type: "string", default: "128" } },
});
const [rounds, steps, hidden] = [Number(values.rounds), Number(values.steps), Number(values.hidden)];
const [clients, batch, sequenceLength, lr] = [10, 8, 80, 0.5];

const model = lstmModel({ sequenceLength, hidden });
const init = model.init(Rng.fromSeed(0));
// The first steps * batch windows of each of the first ten presidents, in order.
const sotu = loadSotuCharacters({ sequenceLength });
const windows = sotu.clientIndices.slice(0, clients).map((indices) => indices.subarray(0, steps * batch));
const ids = new Int32Array(clients * steps * batch * sequenceLength);
const next = new Int32Array(clients * steps * batch);
windows.flatMap((indices) => Array.from(indices)).forEach((example, i) => {
  ids.set(sotu.train.x.subarray(example * sequenceLength, (example + 1) * sequenceLength), i * sequenceLength);
  next[i] = sotu.train.y[example]!;
});

await useBackend("onnx");
const params = Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)]));
const cohort = {
  x: tf.tensor(ids, [clients, steps, batch, sequenceLength], "int32"),
  y: tf.tensor(next, [clients, steps, batch], "int32"),
  mask: tf.ones([clients, steps, batch]),
  count: tf.fill([clients], steps * batch),
};
const fedavg = fedAvgProgram(model);
type RoundResult = { params: Record<string, tf.Tensor>; loss: tf.Tensor };
const variants: Record<string, () => Promise<RoundResult>> = {
  "dsl onnx": async () => (await fedavg.run({ params, ...cohort, lr } as never, { backend: "onnx" })) as unknown as RoundResult,
  "dsl onnx no workers": async () => (await fedavg.run({ params, ...cohort, lr } as never, { backend: "onnx", workers: 0 })) as unknown as RoundResult,
};

const keys = Object.keys(init);
async function timed(run: () => Promise<RoundResult>): Promise<{ ms: number; result: Record<string, Float32Array> }> {
  const start = performance.now();
  const out = await run();
  const result = Object.fromEntries(await Promise.all([...keys.map(async (k) => [k, await out.params[k]!.data()]), ["loss", await out.loss.data()]]));
  const ms = performance.now() - start;
  tf.dispose([...Object.values(out.params), out.loss]);
  return { ms, result: result as Record<string, Float32Array> };
}

// Warm-up (compilation, sessions, workers), and the results to compare.
const results: Record<string, Record<string, Float32Array>> = {};
for (const [name, run] of Object.entries(variants)) results[name] = (await timed(run)).result;
const agreement: Record<string, number> = { "dsl onnx vs no workers": maxDiff(results["dsl onnx"]!, results["dsl onnx no workers"]!) };

const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, run] of Object.entries(variants)) times[name]!.push((await timed(run)).ms);
}

const python = pythonWithTorch();
let torch: TorchTimes | undefined;
if (python !== undefined) {
  const arrays = {
    ...Object.fromEntries(keys.map((k) => [k, { data: init[k as keyof typeof init].data, shape: init[k as keyof typeof init].shape }])),
    x: { data: ids, shape: [clients, steps, batch, sequenceLength] },
    y: { data: next, shape: [clients, steps, batch] },
    count: { data: new Float32Array(clients).fill(steps * batch), shape: [clients] },
  };
  // OpenMP threads that sleep while they wait: on a busy machine spinning ones make a step 10x slower (2.0 s against 0.19 s here).
  const env = { OMP_WAIT_POLICY: "PASSIVE" };
  torch = runTorch(python, arrays, lr, rounds, { file: "lstm_round_torch.py", outputs: [...keys, "loss"], threads: 2, env });
  agreement["pytorch nn.LSTM vs dsl onnx"] = maxDiff(torch.result, results["dsl onnx"]!);
}

const rows: Record<string, number[]> = { ...times };
if (torch !== undefined) {
  const forms = torch.report.forms as Record<string, number[]>;
  for (const [form, seconds] of Object.entries(forms)) rows[`pytorch ${form}`] = seconds.map((s) => s * 1000);
  rows.pytorch = torch.seconds.map((s) => s * 1000);
}
// The products' arithmetic: per step the input projection [B*L, E] x [E, 4H], the recurrent
// [B, H] x [H, 4H] L times and the output [B, H] x [H, V]; the backward pass does each product
// twice more (for its two operands). The gates' elementwise work is left out.
const embedding = init.embedding.shape[1]!;
const stepFlops = 2 * batch * sequenceLength * 4 * hidden * (embedding + hidden) + 2 * batch * hidden * model.classes;
const roundFlops = 3 * clients * steps * stepFlops;
const seconds = (ms: number) => (ms / 1000).toFixed(3);
const gflops = (ms: number) => (roundFlops / ms / 1e6).toFixed(1).padStart(6);
console.log(`lstm-round: char LSTM (embedding 8, hidden ${hidden}), ${clients} presidents x ${steps} steps, B=${batch}, sequence ${sequenceLength}, ${rounds} rounds each, ${availableParallelism()} cores`);
console.log(`  ${"variant".padEnd(20)} s/round: wall (median)  wall (fastest)   GFLOP/s (fastest; ${(roundFlops / 1e9).toFixed(1)} GFLOP of products per round)`);
for (const [name, ms] of Object.entries(rows)) {
  console.log(`  ${name.padEnd(20)}          ${seconds(median(ms))}          ${seconds(fastest(ms))}           ${gflops(fastest(ms))}`);
}
if (torch === undefined) console.log("  pytorch            PyTorch not available (no python3 that imports torch; Debian: apt-get install python3-torch)");
else console.log(`  (pytorch ${torch.version} with ${python}, 2 threads; its best form: ${String(torch.report.best)})`);
const ratio = (a: string, b: string, target = "") => {
  if (rows[a] === undefined || rows[b] === undefined) return;
  const wall = (median(rows[a]!) / median(rows[b]!)).toFixed(3);
  console.log(`  ratio ${`${a} / ${b}`.padEnd(36)} = ${wall} wall (median), ${(fastest(rows[a]!) / fastest(rows[b]!)).toFixed(3)} wall (fastest)${target}`);
};
ratio("dsl onnx", "pytorch");
ratio("dsl onnx no workers", "pytorch");
ratio("dsl onnx", "dsl onnx no workers", "   (worker threads on / off)");
console.log(`  max |difference| of the new parameters and loss: ${JSON.stringify(agreement)}`);
console.log(peakShareLine("dsl onnx", roundFlops, fastest(rows["dsl onnx"]!), await gemmPeak(), 0.5));
