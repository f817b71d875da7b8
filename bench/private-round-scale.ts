/**
 * bench/private-round-scale: one private round (clip, DP noise, secure sum in groups) of the
 * 2NN with 10, 100, 1,000 and 10,000 clients, each with 600 MNIST-shaped examples (E=1, B=20,
 * lr 0.1, onnx), through the BullMQ engine: a coordinator process and two `fedtensor worker`
 * processes (this file in worker mode: the engine's startWorker with this bench's data) on a
 * redis-server the bench starts on a free local port.
 *
 * The round is the library's FedAvg with the aggregator chain clip,dp,secure (what `fedtensor
 * run --aggregator clip,dp,secure` runs): each client clips its update to L2 norm 1; the
 * clients' clipped updates are summed with secureSum in groups (each chunk one SecAgg+ group
 * of at least --group-min clients, masks over the SecAgg+ graph); the coordinator adds
 * N(0, (z C)^2) noise (z = 1) drawn from a key split from a fresh node:crypto key, which never
 * leaves it, and divides by the cohort size (the dp stage's expected cohort, here all clients).
 *
 * The clients share a pool of 6,000 examples (client c has examples 600c mod 6,000 onwards),
 * as bench/fedavg-scaling.ts, so that 10,000 clients need no 19 GB of data. Each cohort size
 * runs in a fresh coordinator and fresh workers; rounds 1 and 2 run, round 2 is timed (round 1
 * loads data and compiles on each worker) except at --single-round sizes and above, where one
 * round is timed, fixed costs included. Peak RSS: the kernel's high-water mark of each process
 * (maxRSS, VmHWM). Up to --check-upto clients, the round is run again in the coordinator
 * without workers, from the same inputs and key, and the bytes of the two results compared.
 *
 * usage: node dist/bench/private-round-scale.js [--clients 10,100,1000,10000] [--chunk 25]
 *          [--group-min 10] [--check-upto 1000] [--single-round 10000] [--timeout 5400]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { aggregator } from "../src/lib/aggregators/aggregator.js";
import { aggregationStages as stages } from "../src/lib/aggregators/stages.js";
import { fedAvgProgram } from "../src/lib/algorithms/fedavg.js";
import { labelledDataset } from "../src/lib/data/dataset.js";
import { federate, type FederatedDataset } from "../src/lib/data/federated.js";
import type { HostData } from "../src/lib/data/host-tensor.js";
import { mlp2nn } from "../src/lib/models/dense.js";
import { Rng } from "../src/lib/random.js";
import { runOnCohort } from "../src/lib/run/cohort.js";
import { validateRunConfig, type RunConfig } from "../src/lib/run/config.js";
import { RedisEngine } from "../src/lib/run/engine/coordinator.js";
import { startWorker } from "../src/lib/run/engine/worker.js";
import { roundSample } from "../src/lib/run/setup.js";
import { useBackend } from "../src/runtime/backend.js";
import { redisBinary, startRedis } from "./redis-server.js";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "10,100,1000,10000" },
    chunk: { type: "string", default: "25" },
    "group-min": { type: "string", default: "10" },
    "check-upto": { type: "string", default: "1000" },
    "single-round": { type: "string", default: "10000" },
    timeout: { type: "string", default: "5400" },
    child: { type: "string" },
    worker: { type: "string" },
  },
});
const [examples, batchSize, lr, pool, clip, noiseMultiplier, bits] = [600, 20, 0.1, 6000, 1, 1, 30];
const [chunk, groupMin] = [Number(values.chunk), Number(values["group-min"])];

/** The clients' data: `clients` clients of 600 examples from one seeded pool of 6,000 (the same in every process). */
function pooledData(clients: number): FederatedDataset<HostData> {
  const rng = Rng.fromSeed(0);
  const train = labelledDataset("pool", { x: new Float32Array(pool * 784).map(() => rng.float()), y: new Int32Array(pool).map(() => rng.int(0, 10)), featureShape: [784], numClasses: 10 });
  const partition = Array.from({ length: clients }, (_, c) => Int32Array.from({ length: examples }, (_, i) => ((c * examples) % pool) + i));
  return federate(train, train, partition);
}

/**
 * The round program: the library's FedAvg with the chain `clip,dp,secure`, as `fedtensor run
 * --aggregator clip,dp,secure` builds it (fixed clip C, dp's noise on the secure sum, each
 * chunk one secure group of at least --group-min clients).
 */
function privateRound() {
  // A group holds at most twice --chunk clients (src/lib/run/cohort.ts secureGroups): the quantization fits them.
  const chain = aggregator(stages.clip(clip), stages.dp(), stages.secure({ bits, clip, maxWeight: examples, maxClients: 2 * chunk, minClients: groupMin }));
  return fedAvgProgram(mlp2nn, { aggregator: chain }) as unknown as { ir: never; run(inputs: never, options: never): Promise<unknown> };
}

const configFor = (clients: number, url: string): RunConfig =>
  validateRunConfig({ model: "2nn", clients, clientsPerRound: clients, batchSize, chunkClients: chunk, backend: "onnx", engine: url, out: tmpdir() }, "bench");

const maxRssMiB = () => process.resourceUsage().maxRSS / 1024;

/** One cohort size as the coordinator: the rounds through the workers, then the in-process check. */
async function coordinate(clients: number, url: string): Promise<Record<string, unknown>> {
  await useBackend("onnx");
  const config = configFor(clients, url);
  const data = pooledData(clients);
  const program = privateRound();
  const params = Object.fromEntries(Object.entries(mlp2nn.init(Rng.fromSeed(1))).map(([k, v]) => [k, tf.tensor(v.data, v.shape)]));
  // The round's secret key: from the OS, as a private run's (src/lib/privacy/secret.ts); only this process holds it.
  const key = [randomBytes(4).readInt32LE(0), randomBytes(4).readInt32LE(0)];
  const engine = await RedisEngine.open(url, () => {});
  const single = clients >= Number(values["single-round"]);
  let seconds = 0;
  let result: Record<string, tf.Tensor> = {};
  let inputs: Record<string, unknown> = {};
  try {
    for (const round of single ? [1] : [1, 2]) {
      const sample = roundSample(data, config, Rng.fromSeed(config.seed), round, [784]);
      inputs = { params, lr, clip, noiseMultiplier, expectedClients: clients, key, round };
      const start = performance.now();
      tf.dispose(Object.values(result));
      const out = (await runOnCohort(program, inputs, sample, { chunkClients: chunk, options: { backend: "onnx" }, engine: engine.forRound(config, round, [784]) })) as { params: Record<string, tf.Tensor>; clip: tf.Tensor };
      tf.dispose(out.clip);
      result = out.params;
      await Promise.all(Object.values(result).map((t) => t.data()));
      seconds = (performance.now() - start) / 1000;
    }
  } finally {
    await engine.close();
  }
  const rss = maxRssMiB();
  let same: boolean | undefined;
  if (clients <= Number(values["check-upto"])) {
    const sample = roundSample(data, config, Rng.fromSeed(config.seed), inputs.round as number, [784]);
    const local = ((await runOnCohort(program, inputs, sample, { chunkClients: chunk, options: { backend: "onnx" } })) as { params: Record<string, tf.Tensor> }).params;
    const bytes = async (tree: Record<string, tf.Tensor>) => Buffer.concat(await Promise.all(Object.values(tree).map(async (t) => Buffer.from(((await t.data()) as Float32Array).buffer))));
    same = (await bytes(local)).equals(await bytes(result));
  }
  return { clients, seconds, coordinatorRssMiB: rss, groups: Math.max(1, Math.min(Math.ceil(clients / chunk), Math.floor(clients / groupMin))), same };
}

/** The kernel's high-water mark of a process's resident memory (VmHWM), MiB. */
const peakRssOf = (pid: number): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

async function startBenchWorker(self: string, url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [self, "--worker", url, "--chunk", String(chunk), "--group-min", String(groupMin)], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (c: Buffer) => {
      output += c.toString();
      if (output.includes("ready")) resolve();
    });
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}: ${output}`)));
  });
  // Drained, so that its log never blocks it.
  child.stdout!.resume();
  return child;
}

if (values.worker !== undefined) {
  // Long locks: a group's masking holds the event loop for seconds on a loaded machine.
  const worker = await startWorker({ url: values.worker, concurrency: 1, lockDuration: 600_000, stalledInterval: 30_000, log: () => {}, data: (config) => pooledData(config.clients) });
  console.log("ready");
  process.once("SIGTERM", () => void worker.stop().then(() => process.exit(0)));
} else if (values.child !== undefined) {
  const [clients, url] = [Number(values.child.split("@")[0]), values.child.split("@")[1]!];
  console.log(JSON.stringify(await coordinate(clients, url)));
  process.exit(0);
} else {
  if (redisBinary === undefined) throw new Error("private-round-scale needs redis-server (apt-get install redis-server)");
  const self = fileURLToPath(import.meta.url);
  const redis = await startRedis();
  console.log(`private-round-scale: clip (C=${clip}), secure sum in groups (chunks of ${chunk}, groups of ${groupMin} or more, SecAgg+ masks, ${bits} bits), N(0, (${noiseMultiplier} C)^2) at the coordinator; 2NN, ${examples} examples a client, E=1, B=${batchSize}, onnx; BullMQ with 2 workers`);
  console.log(`  ${"clients".padStart(7)}  groups   s/round   s/client ratio   coordinator RSS MiB   worker RSS MiB   same bytes as in-process`);
  let first: number | undefined;
  try {
    for (const clients of values.clients.split(",").map(Number)) {
      const workers = [await startBenchWorker(self, redis.url), await startBenchWorker(self, redis.url)];
      const child = spawnSync(process.execPath, [self, "--child", `${clients}@${redis.url}`, "--chunk", String(chunk), "--group-min", String(groupMin), "--check-upto", values["check-upto"]!, "--single-round", values["single-round"]!], {
        encoding: "utf8",
        maxBuffer: 2 ** 24,
        timeout: Number(values.timeout) * 1000,
      });
      const workerRss = workers.map((w) => peakRssOf(w.pid!));
      for (const w of workers) w.kill("SIGKILL");
      const last = child.stdout.trim().split("\n").pop() ?? "";
      if (child.status !== 0 || !last.startsWith("{")) {
        console.log(`  ${String(clients).padStart(7)}  failed: ${(child.error?.message ?? child.stderr.split("\n").find((l) => /^\w*Error: |FT\d{3}: /.test(l)) ?? `exit ${child.status}`).slice(0, 200)}`);
        break;
      }
      const m = JSON.parse(last) as { seconds: number; coordinatorRssMiB: number; groups: number; same?: boolean };
      first ??= m.seconds / clients;
      console.log(
        `  ${String(clients).padStart(7)}  ${String(m.groups).padStart(6)}   ${m.seconds.toFixed(2).padStart(7)}   ${(m.seconds / clients / first).toFixed(2).padStart(14)}   ${m.coordinatorRssMiB.toFixed(0).padStart(19)}   ${workerRss.map((r) => r.toFixed(0)).join(", ").padStart(14)}   ${m.same === undefined ? "not checked" : m.same ? "yes" : "NO"}`,
      );
    }
  } finally {
    redis.stop();
  }
}
