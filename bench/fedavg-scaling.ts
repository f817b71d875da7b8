/**
 * bench/fedavg-scaling: FedAvg rounds of the 2NN with 10, 100, 1,000 and 10,000 clients per
 * round, each client with 600 MNIST-shaped examples (E=1, B=20, lr 0.1), on onnx (worker
 * threads as by default). Rounds are streamed in chunks of --chunk clients (the default of
 * `fedtensor run`'s --chunk-clients), each chunk's data copied from the federated dataset
 * when it runs; `whole` rows run the same round unchunked (the cohort as one padded input, as
 * before streaming) as the baseline. The clients share a pool of 6,000 examples (client c has
 * examples 600c mod 6,000 onwards), so that 10,000 clients need no 19 GB of data.
 * Each backend, mode and cohort size runs in a child process of its own, so that its peak
 * memory is its own: peak RSS (all threads, from the kernel) and the largest V8 heap plus array
 * buffers seen between rounds. Ratios: seconds per client and peak RSS against the first row of
 * the same backend and mode.
 *
 * usage: node dist/bench/fedavg-scaling.js [--clients 10,100,1000,10000] [--whole 10,100]
 *          [--backends onnx] [--chunk 100]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { labelledDataset } from "../src/lib/data/dataset.js";
import { federate, sampleRound } from "../src/lib/data/federated.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { runOnCohort } from "../src/lib/run/cohort.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "10,100,1000,10000" },
    whole: { type: "string", default: "10,100" },
    backends: { type: "string", default: "onnx" },
    chunk: { type: "string", default: "100" },
    child: { type: "string" },
  },
});
const [examples, batch, lr, pool] = [600, 20, 0.1, 6000];

interface Measurement {
  readonly seconds: number[];
  readonly peakRssMiB: number;
  readonly peakHeapMiB: number;
}

type Mode = "streamed" | "whole";

/** Warm-up and timed rounds: more of both for small cohorts, whose rounds are short and whose first ones still warm up sessions and workers. */
const roundsFor = (clients: number) =>
  clients >= 10000 ? { warmUp: 0, timed: 1 } : clients >= 1000 ? { warmUp: 1, timed: 2 } : clients >= 100 ? { warmUp: 1, timed: 3 } : { warmUp: 3, timed: 5 };

/** One backend, mode and cohort size, in this (child) process. */
async function measure(backend: BackendName, mode: Mode, clients: number): Promise<Measurement> {
  await useBackend(backend);
  const rng = Rng.fromSeed(0);
  const init = mlp2nn.init(rng);
  const train = labelledDataset("pool", {
    x: new Float32Array(pool * 784).map(() => rng.float()),
    y: new Int32Array(pool).map(() => rng.int(0, 10)),
    featureShape: [784],
    numClasses: 10,
  });
  const partition = Array.from({ length: clients }, (_, c) => Int32Array.from({ length: examples }, (_, i) => ((c * examples) % pool) + i));
  const data = federate(train, train, partition);
  const params = Object.fromEntries(Object.entries(init).map(([k, v]) => [k, tf.tensor(v.data, v.shape)]));
  const fedavg = fedAvgProgram(mlp2nn);
  let peakHeap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed + m.arrayBuffers);
  };
  const seconds: number[] = [];
  const { warmUp, timed } = roundsFor(clients);
  for (let r = 0; r < warmUp + timed; r++) {
    const start = performance.now();
    const cohort = sampleRound(data, { rng, round: r, clientsPerRound: clients, batchSize: batch });
    // `whole`: one chunk of the whole cohort, which runs the program unchunked.
    const chunkClients = mode === "whole" ? clients : Number(values.chunk);
    const out = (await runOnCohort(fedavg, { params, lr }, cohort, { chunkClients, options: { backend } })) as { loss: tf.Tensor };
    await out.loss.data();
    sample();
    if (r >= warmUp) seconds.push((performance.now() - start) / 1000);
    tf.dispose(out as never);
  }
  return { seconds, peakRssMiB: process.resourceUsage().maxRSS / 1024, peakHeapMiB: peakHeap / 2 ** 20 };
}

if (values.child !== undefined) {
  const [backend, mode, clients] = values.child.split(":") as [BackendName, Mode, string];
  console.log(JSON.stringify(await measure(backend, mode, Number(clients))));
} else {
  const self = fileURLToPath(import.meta.url);
  console.log(`fedavg-scaling: 2NN, ${examples} examples per client, E=1, B=${batch}, chunks of ${values.chunk} clients; median of the timed rounds, peak memory of the process`);
  console.log(`  ${"backend".padEnd(8)} ${"mode".padEnd(8)} ${"clients".padStart(7)}  s/round   clients/s   peak RSS MiB   heap+buffers MiB   s/client ratio   RSS ratio`);
  for (const backend of values.backends.split(",")) {
    for (const mode of ["whole", "streamed"] as const) {
      let first: { perClient: number; rss: number } | undefined;
      for (const clients of (mode === "whole" ? values.whole : values.clients).split(",").filter((c) => c !== "").map(Number)) {
        const child = spawnSync(process.execPath, [self, "--child", `${backend}:${mode}:${clients}`, "--chunk", values.chunk], { encoding: "utf8", maxBuffer: 2 ** 24 });
        const last = child.stdout.trim().split("\n").pop() ?? "";
        const row = `  ${backend.padEnd(8)} ${mode.padEnd(8)} ${String(clients).padStart(7)}`;
        if (child.status !== 0 || !last.startsWith("{")) {
          const why = child.signal ?? (child.stderr.split("\n").find((l) => /Error|memory/i.test(l)) ?? `exit ${child.status}`).trim();
          console.log(`${row}  failed: ${why.slice(0, 100)}`);
          continue;
        }
        const m = JSON.parse(last) as Measurement;
        const median = [...m.seconds].sort((a, b) => a - b)[Math.floor(m.seconds.length / 2)]!;
        first ??= { perClient: median / clients, rss: m.peakRssMiB };
        console.log(
          `${row}  ${median.toFixed(3).padStart(7)}   ${(clients / median).toFixed(0).padStart(9)}   ${m.peakRssMiB.toFixed(0).padStart(12)}   ${m.peakHeapMiB.toFixed(0).padStart(16)}   ${(median / clients / first.perClient).toFixed(2).padStart(14)}   ${(m.peakRssMiB / first.rss).toFixed(2).padStart(9)}`,
        );
      }
    }
  }
}
