/**
 * The worker side of the BullMQ engine (`fedtensor worker`): takes chunk jobs, builds the
 * chunk's batches from the data set as the run config says (the same bytes the coordinator
 * would build), runs the round's fused work+accumulate part on its own backend, and returns
 * the partial accumulator, with its clients' new state when the program keeps one. Caches the last data set, program and shared inputs it used, so a
 * round's jobs after the first on a worker read only their reference.
 */
import * as tf from "@tensorflow/tfjs";
import { Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { loadProgram } from "../../../front/load.js";
import type { ProgramIR } from "../../../ir/types.js";
import { useBackend } from "../../../runtime/backend.js";
import { chunkInputs, leavesByPath } from "../../../runtime/mapreduce.js";
import { runProgram } from "../../../runtime/run.js";
import type { FederatedDataset } from "../../data/federated.js";
import { elementCount, type HostData } from "../../data/host-tensor.js";
import { Rng } from "../../random.js";
import { cohortData } from "../cohort.js";
import { federatedData, federatedDataKey, roundSample } from "../setup.js";
import type { ChunkJobData, ChunkResult, StoredForm } from "./coordinator.js";
import { bullConnection, checkReachable, chunkQueue, keys, within } from "./redis.js";
import { decodeRecord, encodeRecord } from "./wire.js";

export interface WorkerSettings {
  readonly url: string;
  /** Chunks run at once (each on the same backend). */
  readonly concurrency: number;
  /** BullMQ's job lock (ms): a worker that stops renewing it for this long is taken for dead. */
  readonly lockDuration: number;
  /** How often (ms) workers look for jobs whose worker died (BullMQ's stalled-job check). */
  readonly stalledInterval: number;
  readonly log: (line: string) => void;
  /** The data set of a run config; the run's own (federatedData) unless a bench gives another (bench/private-round-scale.ts). */
  readonly data?: (config: ChunkJobData["config"]) => FederatedDataset<HostData>;
}

/** The last value computed for a key (a worker serves one run at a time, typically). */
function lastOf<T>(): (key: string, make: () => Promise<T>) => Promise<T> {
  let last: { key: string; value: Promise<T> } | undefined;
  return (key, make) => {
    if (last?.key !== key) {
      const value = make();
      last = { key, value };
      value.catch(() => (last = undefined));
    }
    return last.value;
  };
}

export function chunkProcessor(redis: Redis, log: (line: string) => void, dataOf = federatedData): (job: Job<ChunkJobData>) => Promise<ChunkResult> {
  const dataFor = lastOf<FederatedDataset<HostData>>();
  const formFor = lastOf<StoredForm & { program: ProgramIR; zeroProgram: ProgramIR }>();
  // Host data, not tensors: a job of another round may still read the inputs this cache replaces.
  const inputsFor = lastOf<Record<string, unknown>>();
  const fetch = async (key: string, what: string): Promise<Buffer> => {
    const bytes = await redis.getBuffer(key);
    if (bytes === null) throw new Error(`${what} ${key} is not in Redis (expired or deleted)`);
    return bytes;
  };
  return async (job) => {
    const { session, round, chunk, clients, steps, config, featureShape } = job.data;
    // The coordinator that enqueued this is gone (crashed or stopped): nobody would read the result.
    if ((await redis.exists(keys.session(session))) === 0) {
      log(`round ${round} chunk ${chunk}: skipped, its coordinator is gone (job ${job.id})`);
      return { abandoned: true };
    }
    const started = performance.now();
    log(`round ${round} chunk ${chunk}: ${clients.length} clients (job ${job.id}, attempt ${job.attemptsMade + 1})`);
    const form = await formFor(job.data.form, async () => {
      const stored = JSON.parse((await fetch(job.data.form, "the program")).toString("utf8")) as StoredForm;
      // Checked, not trusted: loadProgram re-types every node.
      return { ...stored, program: loadProgram(stored.ir).ir, zeroProgram: loadProgram(stored.zero.ir).ir };
    });
    const shared = await inputsFor(job.data.inputs, async () => Object.fromEntries(decodeRecord(await fetch(job.data.inputs, "the round's inputs"))));
    await useBackend(config.backend);
    const data = await dataFor(federatedDataKey(config), async () => dataOf(config));
    const sample = roundSample(data, config, Rng.fromSeed(config.seed), round, featureShape);
    const perClient = Object.fromEntries(Object.entries(job.data.perClient).map(([name, t]) => [name, { shape: [...t.shape], data: t.dtype === "int32" ? Int32Array.from(t.data) : Float32Array.from(t.data) }]));
    // Each client's own randomness (distributed DP's keys), drawn here as the client would: never in a job.
    for (const [name, shape] of Object.entries(job.data.drawn ?? {})) perClient[name] = { shape: [...shape], data: globalThis.crypto.getRandomValues(new Int32Array(elementCount(shape))) };
    // The chunk's clients' state, read from the record its job names.
    const state = job.data.state === undefined ? {} : { [job.data.state.input]: Object.fromEntries(decodeRecord(await fetch(job.data.state.key, "the chunk's client state"))) };
    const clientLeaves = leavesByPath(form.inputTree, { ...cohortData(sample.batch(Int32Array.from(clients), steps)), ...perClient, ...state });
    const zero = (await runProgram(form.zeroProgram, {}, { backend: config.backend, clients: 1 })) as Record<string, tf.Tensor>;
    // The chunk's places in the cohort, and its group keys drawn here: they never pass through Redis.
    const own = chunkInputs(form, job.data.positions);
    const inputs = Object.fromEntries(form.inputs.map((name) => [name, zero[name] ?? own.get(name) ?? shared[name] ?? clientLeaves.get(name)]));
    let out: Record<string, tf.Tensor>;
    try {
      out = (await runProgram(form.program, inputs, { backend: config.backend })) as Record<string, tf.Tensor>;
    } finally {
      tf.dispose(Object.values(zero));
    }
    try {
      const acc = await encodeRecord(new Map(form.outputs.map((name) => [name, out[name]])));
      // Kept an hour at most: the coordinator deletes it once merged, and one that died never will.
      await redis.set(job.data.result, acc, "PX", 3_600_000);
      log(`round ${round} chunk ${chunk}: done in ${((performance.now() - started) / 1000).toFixed(2)} s`);
      return { bytes: acc.length };
    } finally {
      tf.dispose(Object.values(out));
    }
  };
}

export interface RunningWorker {
  readonly id: string;
  /** Lets the job in hand finish, then disconnects; bounded in time, so a worker whose Redis is gone still stops. */
  stop(): Promise<void>;
}

/** Starts a worker on Redis at `url` (FT319 when unreachable); resolves once it is listening for jobs. */
export async function startWorker(settings: WorkerSettings): Promise<RunningWorker> {
  await checkReachable(settings.url);
  const redis = bullConnection(settings.url);
  const jobs = bullConnection(settings.url);
  let lastComplaint = 0;
  const complain = (error: Error) => {
    // ioredis retries for ever while Redis is down; said at most every 5 s.
    if (Date.now() - lastComplaint < 5000) return;
    lastComplaint = Date.now();
    settings.log(`redis ${settings.url}: ${error.message}`);
  };
  redis.on("error", complain);
  jobs.on("error", complain);
  await Promise.all([redis.connect(), jobs.connect()]);
  const worker = new Worker<ChunkJobData, ChunkResult>(chunkQueue, chunkProcessor(redis, settings.log, settings.data), {
    connection: jobs,
    concurrency: settings.concurrency,
    lockDuration: settings.lockDuration,
    stalledInterval: settings.stalledInterval,
    // A job whose worker died is retried twice before it fails (and fails its round: FT320).
    maxStalledCount: 2,
    autorun: false,
  });
  worker.on("error", complain);
  worker.on("failed", (job, error) => settings.log(`round ${job?.data.round} chunk ${job?.data.chunk}: failed: ${error.message}`));
  void worker.run();
  await worker.waitUntilReady();
  return {
    id: worker.id,
    async stop() {
      // With Redis gone, close() waits for ever on the reconnecting connections.
      await within(worker.close(), settings.lockDuration);
      [redis, jobs].forEach((r) => r.disconnect());
    },
  };
}
