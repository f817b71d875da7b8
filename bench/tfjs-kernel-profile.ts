/**
 * bench/tfjs-kernel-profile: where a FedAvg round's time goes on a tfjs backend (webgpu above
 * all, where the H200's CNN round was no faster at 100 clients than at 10 per client:
 * docs/benchmarks.md "GPU"). One warm-up round, then one round under tf.profile: per tfjs
 * kernel, how many times it ran and its summed kernel time (the GPU's own timestamps on
 * webgpu where the adapter has timestamp queries, else the time until its result was ready),
 * the top kernels by time, and the round's wall time beside the summed kernel time.
 *
 * usage: node dist/bench/tfjs-kernel-profile.js [--backend webgpu] [--model cnn|2nn] [--clients 10] [--top 15]
 */
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { cnn } from "../src/lib/models/cnn.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { backendNames, useBackend, type BackendName } from "../src/runtime/backend.js";

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "webgpu" },
    model: { type: "string", default: "cnn" },
    clients: { type: "string", default: "10" },
    top: { type: "string", default: "15" },
  },
});
const backend = values.backend as BackendName;
if (!backendNames.includes(backend) || backend === "onnx") throw new Error(`--backend: a tfjs backend (${backendNames.filter((b) => b !== "onnx").join(", ")}), got ${values.backend}`);
const models = { cnn, "2nn": mlp2nn } as const;
if (!(values.model in models)) throw new Error(`--model: cnn or 2nn, got ${values.model}`);
const model = models[values.model as keyof typeof models];
const clients = Number(values.clients);
if (!(Number.isInteger(clients) && clients >= 1)) throw new Error(`--clients: a whole number of at least 1, got ${values.clients}`);
const [examples, batch, lr] = [600, 20, 0.1];
const steps = examples / batch;

await useBackend(backend);
const rng = Rng.fromSeed(0);
const init = model.init(rng);
const params = Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)]));
const inputs = {
  params,
  x: tf.tensor(new Float32Array(clients * examples * 784).map(() => rng.float()), [clients, steps, batch, 784]),
  y: tf.tensor(new Int32Array(clients * examples).map(() => rng.int(0, 10)), [clients, steps, batch], "int32"),
  mask: tf.ones([clients, steps, batch]),
  count: tf.fill([clients], examples),
  lr,
};
const round = fedAvgProgram(model as never);

/** One round, its results read back (the end of its GPU work). */
async function oneRound(): Promise<void> {
  const out = (await round.run(inputs as never, { backend })) as unknown as { params: Record<string, tf.Tensor>; loss: tf.Tensor };
  await Promise.all([...Object.values(out.params).map((t) => t.data()), out.loss.data()]);
  tf.dispose([...Object.values(out.params), out.loss]);
}

await oneRound();
const start = performance.now();
const profile = await tf.profile(oneRound);
const wall = performance.now() - start;
const byKernel = new Map<string, { count: number; ms: number }>();
let timed = 0;
for (const kernel of profile.kernels) {
  const ms = typeof kernel.kernelTimeMs === "number" ? kernel.kernelTimeMs : 0;
  if (typeof kernel.kernelTimeMs === "number") timed++;
  const entry = byKernel.get(kernel.name) ?? { count: 0, ms: 0 };
  byKernel.set(kernel.name, { count: entry.count + 1, ms: entry.ms + ms });
}
const total = [...byKernel.values()].reduce((sum, k) => sum + k.ms, 0);
console.log(`tfjs-kernel-profile: fedavg ${values.model}, ${clients} clients x ${examples} examples, B=${batch}, E=1, on ${backend} (${tf.getBackend()})`);
console.log(`round ${(wall / 1000).toFixed(3)} s under the profiler; ${profile.kernels.length} kernel calls, ${timed} with a kernel time; summed kernel time ${(total / 1000).toFixed(3)} s`);
console.log("  kernel                         calls   total ms   ms/call   share");
for (const [name, { count, ms }] of [...byKernel].sort((a, b) => b[1].ms - a[1].ms || b[1].count - a[1].count).slice(0, Number(values.top))) {
  console.log(`  ${name.padEnd(28)} ${String(count).padStart(7)} ${ms.toFixed(1).padStart(10)} ${(ms / count).toFixed(3).padStart(9)} ${total > 0 ? `${((100 * ms) / total).toFixed(1).padStart(5)}%` : "    -"}`);
}
