/**
 * bench/fedavg-scaling: FedAvg rounds of the 2NN (or the CNN) with 10, 100 and 1,000 clients
 * per round, each client with the same 600 MNIST-shaped examples (E=1, B=20, lr 0.1), on onnx
 * and wasm (worker threads as by default) or any backend named. Each backend, model and cohort
 * size runs in a child process of its own, so that its peak memory is its own: peak RSS (all
 * threads, from the kernel) and the largest V8 heap plus array buffers seen between rounds.
 * A child that runs past --timeout seconds is stopped and reported as such; --json writes
 * every measurement to a file (bench/gpu/run-h200.sh reads it).
 *
 * usage: node dist/bench/fedavg-scaling.js [--clients 10,100,1000] [--backends onnx,wasm]
 *          [--models 2nn,cnn] [--timeout 600] [--json file]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { writeFileSync } from "node:fs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { cnn } from "../src/lib/models/cnn.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "10,100,1000" },
    backends: { type: "string", default: "onnx,wasm" },
    models: { type: "string", default: "2nn" },
    timeout: { type: "string", default: "600" },
    json: { type: "string" },
    child: { type: "string" },
  },
});
const models = { "2nn": mlp2nn, cnn } as const;
type ModelName = keyof typeof models;
const [examples, batch, lr] = [600, 20, 0.1];
const steps = examples / batch;

interface Measurement {
  readonly seconds: number[];
  readonly peakRssMiB: number;
  readonly peakHeapMiB: number;
}

/** Warm-up and timed rounds: more of both for small cohorts, whose rounds are short and whose first ones still warm up sessions and workers. */
const roundsFor = (clients: number) => (clients >= 1000 ? { warmUp: 1, timed: 2 } : clients >= 100 ? { warmUp: 1, timed: 3 } : { warmUp: 3, timed: 5 });

/** One backend, model and cohort size, in this (child) process. */
async function measure(backend: BackendName, modelName: ModelName, clients: number): Promise<Measurement> {
  await useBackend(backend);
  const model = models[modelName];
  const rng = Rng.fromSeed(0);
  const init = model.init(rng);
  const pixels = new Float32Array(examples * 784).map(() => rng.float());
  const labels = new Int32Array(examples).map(() => rng.int(0, 10));
  const x = new Float32Array(clients * pixels.length);
  const y = new Int32Array(clients * labels.length);
  for (let c = 0; c < clients; c++) {
    x.set(pixels, c * pixels.length);
    y.set(labels, c * labels.length);
  }
  const inputs = {
    params: Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)])),
    x: tf.tensor(x, [clients, steps, batch, 784]),
    y: tf.tensor(y, [clients, steps, batch], "int32"),
    mask: tf.ones([clients, steps, batch]),
    count: tf.fill([clients], examples),
    lr,
  };
  const fedavg = fedAvgProgram(model as typeof mlp2nn);
  let peakHeap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed + m.arrayBuffers);
  };
  const seconds: number[] = [];
  const { warmUp, timed } = roundsFor(clients);
  for (let r = 0; r < warmUp + timed; r++) {
    const start = performance.now();
    const out = await fedavg.run(inputs as never, { backend });
    await out.loss.data();
    sample();
    if (r >= warmUp) seconds.push((performance.now() - start) / 1000);
    tf.dispose(out as never);
  }
  return { seconds, peakRssMiB: process.resourceUsage().maxRSS / 1024, peakHeapMiB: peakHeap / 2 ** 20 };
}

if (values.child !== undefined) {
  const [backend, modelName, clients] = values.child.split(":") as [BackendName, ModelName, string];
  console.log(JSON.stringify(await measure(backend, modelName, Number(clients))));
} else {
  const self = fileURLToPath(import.meta.url);
  const timeoutMs = Number(values.timeout) * 1000;
  const rows: Record<string, unknown>[] = [];
  console.log(`fedavg-scaling: ${examples} examples per client, E=1, B=${batch}; median of the timed rounds, peak memory of the process`);
  console.log(`  ${"backend".padEnd(8)} ${"model".padEnd(5)} ${"clients".padStart(7)}  s/round   clients/s   peak RSS MiB   peak heap+buffers MiB`);
  for (const backend of values.backends.split(",")) {
    for (const modelName of values.models.split(",")) {
      if (!(modelName in models)) throw new Error(`--models: unknown model '${modelName}'; choose from ${Object.keys(models).join(", ")}`);
      for (const clients of values.clients.split(",").map(Number)) {
        const label = `  ${backend.padEnd(8)} ${modelName.padEnd(5)} ${String(clients).padStart(7)}`;
        const child = spawnSync(process.execPath, [self, "--child", `${backend}:${modelName}:${clients}`], { encoding: "utf8", maxBuffer: 2 ** 24, timeout: timeoutMs });
        const last = child.stdout.trim().split("\n").pop() ?? "";
        if (child.status !== 0 || !last.startsWith("{")) {
          const timedOut = child.error !== undefined && /ETIMEDOUT/.test(String(child.error));
          const why = timedOut ? `timed out after ${values.timeout} s` : (child.signal ?? (child.stderr.split("\n").find((l) => /Error|memory|FT\d{3}/i.test(l)) ?? `exit ${child.status}`).trim());
          console.log(`${label}  failed: ${why.slice(0, 160)}`);
          rows.push({ backend, model: modelName, clients, failed: why });
          continue;
        }
        const m = JSON.parse(last) as Measurement;
        const median = [...m.seconds].sort((a, b) => a - b)[Math.floor(m.seconds.length / 2)]!;
        console.log(
          `${label}  ${median.toFixed(3).padStart(7)}   ${(clients / median).toFixed(0).padStart(9)}   ${m.peakRssMiB.toFixed(0).padStart(12)}   ${m.peakHeapMiB.toFixed(0).padStart(21)}`,
        );
        rows.push({ backend, model: modelName, clients, medianSeconds: median, ...m });
      }
    }
  }
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(rows, null, 2));
}
