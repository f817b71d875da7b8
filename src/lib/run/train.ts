/**
 * The training loop of `fedtensor run`: rounds of the chosen algorithm on the chosen data,
 * with evaluation, a progress display, metrics files, checkpoints and a plot.
 *
 * Each round's randomness (its cohort and shuffles) derives from the seed and the round
 * number alone, so a resumed run makes the same choices as an uninterrupted one. A round whose
 * new state is not finite is rejected (FT303) before it replaces anything: the in-memory state
 * and the last checkpoint stay as they were.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { flatten, leafPaths, unflatten } from "../../front/tree.js";
import { useBackend } from "../../runtime/backend.js";
import { batchEvaluation, roundCohort, type CohortBatches, type FederatedDataset } from "../data/federated.js";
import type { HostData, HostTensor } from "../data/host-tensor.js";
import { Rng } from "../random.js";
import { loadLatestCheckpoint, writeCheckpoint, type TensorTree } from "./checkpoint.js";
import type { RunConfig } from "./config.js";
import { evaluationProgram } from "../algorithms/evaluation.js";
import { metricsFiles, MetricsWriter, readMetrics, type MetricsRow } from "./metrics.js";
import { writePlots } from "./plot.js";
import { RoundProgress, type ProgressStream } from "./progress.js";
import { roundLearningRates } from "./optimizers.js";
import { runnerFor, runOptionsOf, type DeviceTree, type TrainingState } from "./rounds.js";
import { featureShapeFor, federatedData, modelFor } from "./setup.js";

/** The plot's panels: the server model's test accuracy, and the clients' training loss. */
export const plottedMetrics = [
  { key: "test_accuracy", title: "Test accuracy", format: ".1%" },
  { key: "train_loss", title: "Training loss" },
] as const;

export interface TrainingResult {
  readonly rounds: number;
  readonly accuracy: number | undefined;
  readonly loss: number | undefined;
  readonly outDir: string;
  readonly seconds: number;
}

const isStored = (x: unknown): x is { shape: readonly number[]; data: Float32Array } =>
  typeof x === "object" && x !== null && "data" in x && (x as { data: unknown }).data instanceof Float32Array;
const isTensor = (x: unknown): x is tf.Tensor => x instanceof tf.Tensor;

function toDevice(tree: TensorTree): DeviceTree {
  const { leaves, def } = flatten(tree, isStored, "server state", "float32 tensors");
  return unflatten(def, leaves.map((t) => tf.tensor(t.data, [...t.shape], "float32"))) as DeviceTree;
}

async function toHost(tree: DeviceTree): Promise<TensorTree> {
  const { leaves, def } = flatten(tree, isTensor, "server state");
  const data = await Promise.all(leaves.map(async (t) => ({ shape: t.shape, data: (await t.data()) as Float32Array })));
  return unflatten(def, data) as TensorTree;
}

/** A host batch tensor seen with the model's example shape (e.g. 28x28 images as 784 features). */
function withFeatureShape<D extends HostData>(t: HostTensor<D>, leading: number, featureShape: readonly number[]): HostTensor<D> {
  return { shape: [...t.shape.slice(0, leading), ...featureShape], data: t.data };
}

/** FT303 when any leaf of the new state (server or per-client) holds NaN or Infinity, naming the first. */
async function rejectNonFinite(round: number, state: TrainingState): Promise<void> {
  const device = flatten({ params: state.params, server: state.server }, isTensor, "server state");
  const devicePaths = leafPaths(device.def);
  for (const [i, t] of device.leaves.entries()) {
    const finite = tf.tidy(() => tf.all(tf.isFinite(t)));
    const ok = (await finite.data())[0] === 1;
    finite.dispose();
    if (!ok) throw ftError("FT303", { round, what: `the update of ${devicePaths[i]}` });
  }
  const host = flatten(state.clients, isStored, "client state", "float32 tensors");
  const hostPaths = leafPaths(host.def);
  const bad = host.leaves.findIndex((t) => !t.data.every(Number.isFinite));
  if (bad >= 0) throw ftError("FT303", { round, what: `the state of client ${hostPaths[bad]}` });
}

/** The state as a checkpoint stores it: everything on the host. */
async function checkpointState(state: TrainingState): Promise<TensorTree> {
  return { params: await toHost(state.params), server: await toHost(state.server), clients: state.clients };
}

function restoredState(stored: TensorTree): TrainingState {
  const { params, server, clients } = stored as { params: TensorTree; server: TensorTree; clients: TrainingState["clients"] };
  return { params: toDevice(params), server: toDevice(server), clients };
}

const disposeState = (state: TrainingState) => tf.dispose([state.params, state.server] as never);

/** Disposes the tensors of `replaced` that `kept` does not share (an algorithm may carry state over unchanged). */
function disposeReplaced(replaced: TrainingState, kept: TrainingState): void {
  const keep = new Set(flatten({ p: kept.params, s: kept.server }, isTensor, "state").leaves);
  for (const t of flatten({ p: replaced.params, s: replaced.server }, isTensor, "state").leaves) if (!keep.has(t)) t.dispose();
}

export async function train(config: RunConfig, stream: ProgressStream): Promise<TrainingResult> {
  const started = performance.now();
  await useBackend(config.backend);
  const model = modelFor(config);
  const data: FederatedDataset<HostData> = federatedData(config);
  const featureShape = featureShapeFor(model, data.train.featureShape);
  const runner = runnerFor(config, model);
  const learningRate = roundLearningRates(config);
  const evaluate = evaluationProgram(model);
  const testBatches = batchEvaluation(data.test, 500);
  const evaluation = {
    x: withFeatureShape(testBatches.x, 2, featureShape),
    y: testBatches.y,
    mask: testBatches.mask,
  };
  const rng = Rng.fromSeed(config.seed);
  await mkdir(config.out, { recursive: true });

  let state: TrainingState;
  let firstRound = 0;
  const resumed = config.resume ? await loadLatestCheckpoint(config.out) : undefined;
  if (config.resume && resumed === undefined) throw ftError("FT304", { path: config.out, why: "--resume found no checkpoint there" });
  if (resumed !== undefined) {
    state = restoredState(resumed.checkpoint.serverState);
    firstRound = resumed.checkpoint.round;
  } else {
    const params = model.init(rng.fork("init"));
    state = { params: toDevice(params), server: toDevice(runner.initialServerState(params)), clients: {} };
  }
  const metrics = resumed === undefined ? await MetricsWriter.create(config.out) : await MetricsWriter.resume(config.out, firstRound);
  const progress = new RoundProgress({ stream, totalRounds: config.rounds, startRound: firstRound });
  if (resumed !== undefined) progress.log(`resumed from round ${firstRound} (${resumed.path})`);

  let last: { accuracy?: number; loss?: number } = {};
  try {
    for (let round = firstRound + 1; round <= config.rounds; round++) {
      const roundStart = performance.now();
      const cohort: CohortBatches<HostData> = roundCohort(data, {
        rng,
        round,
        clientsPerRound: config.clientsPerRound,
        batchSize: config.batchSize,
        epochs: config.localEpochs,
      });
      const batches = { ...cohort, x: withFeatureShape(cohort.x, 3, featureShape) };
      const next = await runner.round(state, batches, { ...config, lr: learningRate(round) });
      try {
        await rejectNonFinite(round, next.state);
      } catch (error) {
        disposeReplaced(next.state, state);
        next.loss.dispose();
        throw error;
      }
      disposeReplaced(state, next.state);
      state = next.state;
      const trainLoss = (await next.loss.data())[0]!;
      next.loss.dispose();
      const row: Record<string, number> = { round, train_loss: trainLoss };
      if (round % config.evalEvery === 0 || round === config.rounds) {
        const result = await evaluate.run({ params: state.params as never, ...evaluation }, runOptionsOf(config));
        last = { accuracy: (await result.accuracy.data())[0]!, loss: (await result.loss.data())[0]! };
        tf.dispose([result.accuracy, result.loss]);
        Object.assign(row, { test_accuracy: last.accuracy, test_loss: last.loss });
      } else {
        Object.assign(row, { test_accuracy: null, test_loss: null });
      }
      row.seconds = (performance.now() - roundStart) / 1000;
      await metrics.append(row as MetricsRow);
      progress.update({ round, loss: trainLoss, ...(last.accuracy === undefined ? {} : { accuracy: last.accuracy }) });
      if ((config.checkpointEvery > 0 && round % config.checkpointEvery === 0) || round === config.rounds) {
        await writeCheckpoint(config.out, { round, serverState: await checkpointState(state), rngState: { seed: config.seed }, config: config as never }, { keep: config.keepCheckpoints });
      }
    }
  } finally {
    progress.finish();
    await metrics.close();
  }
  const rows = readMetrics(join(config.out, metricsFiles.jsonl));
  await writePlots(config.out, [{ name: `${config.algorithm} ${model.name}`, rows }], {
    title: `${config.algorithm} on ${config.dataset} (${model.name})`,
    metrics: plottedMetrics,
  });
  disposeState(state);
  return { rounds: config.rounds, accuracy: last.accuracy, loss: last.loss, outDir: config.out, seconds: (performance.now() - started) / 1000 };
}
