/**
 * The training loop of `fedtensor run`: rounds of the chosen algorithm on the chosen data,
 * with evaluation, a progress display, metrics files, checkpoints and a plot.
 *
 * Each round's randomness (its cohort and shuffles) derives from the seed and the round
 * number alone, so a resumed run makes the same choices as an uninterrupted one; a DP or
 * secure run's noise, masks and DP cohorts derive from the run's secret instead (secret.key,
 * src/lib/privacy/secret.ts), which a resumed run reads back. A round whose
 * new state or metrics are not finite is rejected (FT303) before it replaces anything; the
 * last good state is then saved as a checkpoint, with the plot, before the error goes up.
 * The output folder is locked for the whole run (lock.ts), a new run never reuses another's
 * folder unless --overwrite (run-folder.ts), and a resumed run takes the checkpoint's config
 * (resume-config.ts).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as tf from "@tensorflow/tfjs";
import { FedTensorError, ftError } from "../../errors/error.js";
import { redactCredentials } from "../../errors/redact.js";
import { useBackend } from "../../runtime/backend.js";
import type { FederatedDataset } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import { Rng } from "../random.js";
import { loadLatestCheckpoint, writeCheckpoint, type LoadedCheckpoint, type TensorTree } from "./checkpoint.js";
import { checkSameRun } from "./checkpoint-match.js";
import { ClientStateStore } from "./client-state.js";
import { batchSizeNotice, checkOptionsAgainstData } from "./data-limits.js";
import { algorithmName, type RunConfig, type RunOptionKey } from "./config.js";
import { RedisEngine } from "./engine/coordinator.js";
import { fileFault } from "./file-faults.js";
import { lockRunFolder } from "./lock.js";
import { resumeConfig } from "./resume-config.js";
import { makeRunFolder, prepareNewRunFolder } from "./run-folder.js";
import { metricsFiles, MetricsWriter, readMetrics, type MetricsRow } from "./metrics.js";
import { writePlots, type PlotMetric } from "./plot.js";
import { refuseOverMaxEpsilon } from "./plan.js";
import { accountantOf, epsilonAfter, isDpRun, notPrivateLabel, privacyBudget, privacyColumns, privacyPlotMetrics, releasedLength } from "./privacy.js";
import { clipOf } from "./rounds.js";
import { chainHas, releasesPrivateData } from "./aggregator-chain.js";
import { RunSecret } from "../privacy/secret.js";
import { distributedDpColumns, distributedDpEpsilonAfter } from "./distributed-dp-run.js";
import type { PersonalizationSummary } from "./federated-eval.js";
import { RoundProgress, type ProgressStream } from "./progress.js";
import { bitsPerClient, isRobustRun, leafSizesOf, maliciousClients, robustColumns } from "./robust.js";
import { isEvaluatedRound, personalizationLine, RunEvaluation, shortRunNotice } from "./run-evaluation.js";
import { plotCaption } from "./plot-caption.js";
import { roundLearningRates } from "./optimizers.js";
import { runnerFor, type TrainingState } from "./rounds.js";
import { checkpointState, clientStateBudget, disposeReplaced, disposeState, rejectNonFinite, restoredState, toDevice } from "./training-state.js";
import { featureShapeFor, federatedData, modelFor, privateCohort, roundSample } from "./setup.js";

/** The plot's panels: the server model's test accuracy and loss, and the clients' training loss. */
export const plottedMetrics = [
  { key: "test_accuracy", title: "Test accuracy", format: ".1%" },
  // Three significant digits: a one-point panel's only tick is the value itself.
  { key: "test_loss", title: "Test loss", format: ".3~r" },
  { key: "train_loss", title: "Training loss", format: ".3~r" },
] as const;

export interface TrainingResult {
  /** The run's config: the one asked for, or on --resume the checkpoint's (with the options that may change). */
  readonly config: RunConfig;
  /** The rounds done in all: more than --rounds when a finished run of more rounds was resumed. */
  readonly rounds: number;
  readonly accuracy: number | undefined;
  readonly loss: number | undefined;
  /** DP runs: the epsilon spent by the rounds done, at --dp-delta (Infinity without noise). */
  readonly epsilon?: number;
  /** With --personalize-epochs: the clients' held-out metrics before and after fine-tuning (personalization.json). */
  readonly personalization?: PersonalizationSummary;
  readonly outDir: string;
  readonly seconds: number;
}

export interface TrainOptions {
  /**
   * The options of `config` that were set explicitly; on --resume, only these are compared
   * with the checkpoint's config (the others take the checkpoint's values). All of them when
   * not said: a library caller's config is compared whole.
   */
  readonly given?: Iterable<RunOptionKey>;
}

/**
 * Trains as `requested` says, holding the lock of its output folder throughout. On --resume,
 * the run's config is the checkpoint's (src/lib/run/resume-config.ts); a new run refuses a
 * folder that holds another run unless --overwrite.
 */
export async function train(requested: RunConfig, stream: ProgressStream, options: TrainOptions = {}): Promise<TrainingResult> {
  await makeRunFolder(requested.out);
  const lock = await lockRunFolder(requested.out);
  try {
    return await trainLocked(requested, stream, options.given ?? (Object.keys(requested) as RunOptionKey[]));
  } finally {
    await lock.release();
  }
}

/** The latest checkpoint of the run in `out`, for --resume: FT304 when there is none. */
async function checkpointToResume(out: string): Promise<LoadedCheckpoint> {
  let resumed: LoadedCheckpoint | undefined;
  try {
    resumed = await loadLatestCheckpoint(out);
  } catch (error) {
    throw fileFault(error, out, "read the checkpoints");
  }
  if (resumed === undefined) {
    throw ftError("FT304", { path: out, why: "--resume found no checkpoint there; run without --resume to start it, adding --overwrite if the folder holds another run's files" });
  }
  await checkSameRun(out, resumed);
  return resumed;
}

async function trainLocked(requested: RunConfig, stream: ProgressStream, given: Iterable<RunOptionKey>): Promise<TrainingResult> {
  const started = performance.now();
  const resumed = requested.resume ? await checkpointToResume(requested.out) : undefined;
  if (resumed === undefined) await prepareNewRunFolder(requested.out, requested.overwrite);
  const config = resumed === undefined ? requested : resumeConfig(requested, given, resumed.checkpoint.config, resumed.path);
  await useBackend(config.backend);
  const model = modelFor(config);
  // --max-epsilon: priced before any data is read (src/lib/run/plan.ts).
  refuseOverMaxEpsilon(config);
  const data: FederatedDataset<HostData> = federatedData(config);
  checkOptionsAgainstData(config, data);
  const featureShape = featureShapeFor(model, data.train.featureShape);
  const secret = await runSecret(config, resumed !== undefined);
  const runner = runnerFor(config, model, data, secret);
  const learningRate = roundLearningRates(config);
  const rng = Rng.fromSeed(config.seed);
  const evaluation = new RunEvaluation(model, data, config, featureShape, rng, secret);

  let state: TrainingState;
  let firstRound = 0;
  if (resumed !== undefined) {
    state = await restoredState(resumed, config);
    firstRound = resumed.checkpoint.round;
  } else {
    const params = model.init(rng.fork("init"));
    state = { params: toDevice(params), server: toDevice(runner.initialServerState(params)), clients: new ClientStateStore(clientStateBudget(config)) };
  }
  const writeState = async (round: number, saved: TrainingState, metricsRow: MetricsRow | undefined): Promise<string> => {
    // The engine URL's password stays out of the checkpoint: a resume gives --engine again (resume-config.ts).
    const stored = { ...config, engine: redactCredentials(config.engine) };
    const checkpoint = { round, serverState: await checkpointState(saved), rngState: { seed: config.seed }, config: stored as never, ...(metricsRow === undefined ? {} : { metricsRow: metricsRow as never }) };
    return writeCheckpoint(config.out, checkpoint, { keep: config.keepCheckpoints, clientStates: saved.clients });
  };
  // Round 0's state is saved before anything else of a new run: a run killed before its first
  // checkpoint resumes from it (writeCheckpoint deletes it once a later one is there).
  if (resumed === undefined) await writeState(0, state, undefined);
  const metrics = resumed === undefined ? MetricsWriter.create(config.out) : MetricsWriter.resume(config.out, firstRound);
  let savedRound = firstRound;
  const saveCheckpoint = async (round: number, saved: TrainingState): Promise<string> => {
    // The round's metrics row goes with it, linking the checkpoint to this run's metrics (checkpoint-match.ts).
    const path = await writeState(round, saved, metrics.lastRow?.round === round ? metrics.lastRow : undefined);
    savedRound = round;
    return path;
  };
  // The run's last round: --rounds, or the checkpoint's round when a finished run of more rounds was resumed.
  const finalRound = Math.max(config.rounds, firstRound);
  const notPrivate = notPrivateLabel(config);
  const progress = new RoundProgress({ stream, totalRounds: finalRound, startRound: firstRound, ...(notPrivate === undefined ? {} : { notice: notPrivate }) });
  if (chainHas(config.aggregator, "secure")) progress.log("secure aggregation is simulated in this process: the server holds the key every pair key derives from, so it could unmask any client (docs/algorithms.md)");
  if (resumed !== undefined) reportResume(progress, resumed, config.rounds);
  if (metrics.setAside !== undefined) {
    const { path, rounds } = metrics.setAside;
    const which = rounds.length === 1 ? `row of round ${rounds[0]}, after round ${firstRound}, is` : `rows of rounds ${rounds[0]}-${rounds.at(-1)}, after round ${firstRound}, are`;
    progress.log(`the metrics ${which} set aside in ${path}; the rounds are trained again`);
  }
  const clamped = batchSizeNotice(config, data);
  if (clamped !== undefined) progress.log(clamped);
  const shortRun = shortRunNotice(config, firstRound);
  if (shortRun !== undefined) progress.log(shortRun);

  let last = resumed === undefined ? {} : lastEvaluation(config.out);
  const algorithm = algorithmName(config);
  const leafSizes = leafSizesOf(state.params);
  const parameters = leafSizes.reduce((total, size) => total + size, 0);
  const distributedDp = chainHas(config.aggregator, "distributed-dp");
  if (config.quantizeBits > 0) {
    const [sent, full] = [bitsPerClient(leafSizes, config.quantizeBits, config.quantizeRotation ?? false), bitsPerClient(leafSizes, 0)];
    progress.log(`updates quantized to ${config.quantizeBits} bits: ${sent} bits per client per round instead of ${full} as float32 (${(full / sent).toFixed(2)}x less)`);
  }
  const plotTitle = {
    name: `${algorithm} ${model.name}`,
    title: `${algorithm} on ${config.dataset} (${model.name})${notPrivate === undefined ? "" : `: ${notPrivate}`}`,
    caption: plotCaption(config),
    metrics: [...plottedMetrics, ...evaluation.plotMetrics, ...(isDpRun(config) || distributedDp ? privacyPlotMetrics : [])],
  };
  // Set when --dp-target-epsilon ends the run before --rounds.
  let stoppedAfter: number | undefined;
  let personalization: PersonalizationSummary | undefined;
  // Opened before the first round, so an unreachable Redis is FT319 at once (src/lib/run/engine).
  let engine: RedisEngine | undefined;
  try {
    engine = config.engine === "local" ? undefined : await RedisEngine.open(config.engine, (line) => progress.log(line), config.engineTimeout * 1000, config.waitNotice * 1000);
    for (let round = firstRound + 1; round <= config.rounds; round++) {
      const roundStart = performance.now();
      const budget = privacyBudget(config, round, parameters);
      if (budget.exceeded) {
        progress.log(budget.message);
        if (savedRound < round - 1) await saveCheckpoint(round - 1, state);
        stoppedAfter = round - 1;
        break;
      }
      const cohort = roundSample(data, config, rng, round, featureShape, secret !== undefined && isDpRun(config) ? privateCohort(data, config, secret, round) : undefined);
      const survivors = cohort.clients.length;
      const clipUsed = isDpRun(config) ? await readClip(state) : undefined;
      // The last round is evaluated whatever --eval-every: --rounds, or the last --dp-target-epsilon allows.
      const evaluated = isEvaluatedRound(config, round, round === config.rounds || privacyBudget(config, round + 1, parameters).exceeded);
      let row: Record<string, number | null>;
      // A DP round runs whatever its cohort (an empty one releases noise): --min-clients is 1 there.
      if (survivors < config.minClients && !isDpRun(config)) {
        progress.log(`round ${round} skipped: ${survivors} of ${config.clientsPerRound} clients reported, fewer than --min-clients ${config.minClients}`);
        const test = evaluated ? await evaluation.test(state.params) : undefined;
        row = { ...(await roundMetrics(round, undefined, test)), ...(await evaluation.columns(state.params, round, evaluated)) };
      } else {
        const roundEngine = engine?.forRound(config, round, featureShape);
        const next = await runner.round(state, cohort, { ...config, lr: learningRate(round) }, { round, ...(roundEngine === undefined ? {} : { engine: roundEngine }) });
        try {
          await rejectNonFinite(round, next.state);
          const test = evaluated ? await evaluation.test(next.state.params) : undefined;
          row = { ...(await roundMetrics(round, next.loss, test)), ...(await evaluation.columns(next.state.params, round, evaluated)) };
        } catch (error) {
          state.clients.discard();
          disposeReplaced(next.state, state);
          next.loss?.dispose();
          if (error instanceof FedTensorError && error.code === "FT303" && round > 1) {
            await keepLastGoodRound(round - 1, savedRound < round - 1 ? () => saveCheckpoint(round - 1, state) : undefined, progress, config.out, plotTitle);
          }
          throw error;
        }
        disposeReplaced(state, next.state);
        state = next.state;
        state.clients.commit();
      }
      // Every row says how many clients' updates were aggregated (0 for a skipped round); who dropped only in runs with dropout.
      const counts: Record<string, number> = metrics.hasColumn("clients") === false ? {} : { clients: aggregated(survivors, config.minClients, isDpRun(config)) };
      if (config.dropout > 0) counts.dropped = cohort.dropped.length;
      row = { round, train_loss: row.train_loss!, ...counts, ...row };
      if (isDpRun(config)) row = { ...row, ...privacyColumns(config, round, clipUsed, parameters) };
      if (distributedDp) row = { ...row, ...distributedDpColumns(config, round, releasedLength(config, parameters)) };
      if (isRobustRun(config)) row = { ...row, ...robustColumns(config, maliciousClients(config, round, cohort.clients).size, leafSizes) };
      if (row.test_accuracy !== null) last = { accuracy: row.test_accuracy!, loss: row.test_loss! };
      row.seconds = (performance.now() - roundStart) / 1000;
      // Rows of a private run name the accountant their epsilon comes from (absent in rows of runs from before it was recorded).
      const accountant = accountantOf(config);
      const named = accountant === undefined || metrics.hasColumn("accountant") === false ? {} : { accountant };
      metrics.append({ ...row, ...named, ...(notPrivate === undefined ? {} : { privacy: notPrivate }) } as MetricsRow);
      progress.update({
        round,
        ...(row.train_loss === null ? {} : { loss: row.train_loss! }),
        ...(last.accuracy === undefined ? {} : { accuracy: last.accuracy }),
        ...(typeof row.epsilon === "number" ? { epsilon: row.epsilon } : {}),
        ...evaluation.progress,
      });
      if ((config.checkpointEvery > 0 && round % config.checkpointEvery === 0) || round === config.rounds) {
        await saveCheckpoint(round, state);
      }
    }
    personalization = await evaluation.personalize(state.params, stoppedAfter ?? finalRound);
    if (personalization !== undefined) progress.log(personalizationLine(personalization));
  } finally {
    if (engine !== undefined) {
      const { rounds, sent, received } = engine.traffic;
      progress.log(`engine ${engine.url}: ${rounds} rounds through workers; ${(sent / 1e6).toFixed(2)} MB to Redis, ${(received / 1e6).toFixed(2)} MB of partial accumulators back`);
    }
    progress.finish();
    metrics.close();
    disposeState(state);
    state.clients.close();
    await engine?.close();
  }
  await writeRunPlots(config.out, plotTitle);
  const rounds = stoppedAfter ?? finalRound;
  const privacy = isDpRun(config)
    ? { epsilon: epsilonAfter(config, rounds, parameters, true) }
    : distributedDp
      ? { epsilon: distributedDpEpsilonAfter(config, rounds, releasedLength(config, parameters), true) }
      : {};
  return { config, rounds, accuracy: last.accuracy, loss: last.loss, ...privacy, ...(personalization === undefined ? {} : { personalization }), outDir: config.out, seconds: (performance.now() - started) / 1000 };
}

/** The clients whose updates a round aggregated: its survivors, or none when it was skipped. */
const aggregated = (survivors: number, minClients: number, dp: boolean): number => (survivors < minClients && !dp ? 0 : survivors);

/**
 * A private run's secret (src/lib/privacy/secret.ts): a new run's comes from the OS and is
 * saved to the run folder's secret.key (mode 0600) before any round; a resumed run reads it
 * back; --dp-insecure-seed derives it from that public number. None for other runs.
 */
async function runSecret(config: RunConfig, resumed: boolean): Promise<RunSecret | undefined> {
  if (!releasesPrivateData(config.aggregator)) return undefined;
  if ((config.dpInsecureSeed ?? 0) > 0) return RunSecret.fromInsecureSeed(config.dpInsecureSeed!);
  if (resumed) return RunSecret.load(config.out);
  const secret = RunSecret.generate();
  await secret.save(config.out);
  return secret;
}

/** The clip norm a DP-FedAvg round is about to use: server state. */
async function readClip(state: TrainingState): Promise<number> {
  return (await clipOf(state.server).data())[0]!;
}

/**
 * The round's metrics row (without its time), read from the device and disposed there; FT303
 * when one is not finite, before the round's state replaces anything.
 */
async function roundMetrics(round: number, trainLoss: tf.Tensor | undefined, test: { accuracy: tf.Tensor; loss: tf.Tensor } | undefined): Promise<Record<string, number | null>> {
  const read = async (t: tf.Tensor | undefined) => (t === undefined ? null : (await t.data())[0]!);
  const [loss, testAccuracy, testLoss] = [await read(trainLoss), await read(test?.accuracy), await read(test?.loss)];
  tf.dispose([...(trainLoss === undefined ? [] : [trainLoss]), ...(test === undefined ? [] : [test.accuracy, test.loss])]);
  const check = (value: number | null, what: string) => (value === null ? null : finite(value, round, what));
  return {
    round,
    train_loss: check(loss, "the training loss"),
    test_accuracy: check(testAccuracy, "the test accuracy"),
    test_loss: check(testLoss, "the test loss"),
  };
}

/** A metric of a round; FT303 when it is NaN or infinite (a diverged model, such as one of a huge server lr). */
function finite(value: number, round: number, what: string): number {
  if (!Number.isFinite(value)) throw ftError("FT303", { round, what: `${what} (${value})` });
  return value;
}

/** Says which checkpoint a resumed run continues from, which ones were damaged, and whether it had finished. */
function reportResume(progress: RoundProgress, resumed: LoadedCheckpoint, rounds: number): void {
  for (const { path, why } of resumed.skipped) progress.log(`skipped damaged checkpoint ${path}: ${why}`);
  const round = resumed.checkpoint.round;
  progress.log(`resumed from round ${round} (${resumed.path})`);
  if (round >= rounds) progress.log(`the run had finished: its checkpoint is of round ${round} of ${rounds}; nothing left to train (raise --rounds to go on)`);
}

/** The test accuracy and loss of the last evaluated round in a run's metrics (after MetricsWriter.resume cut them to the checkpoint). */
function lastEvaluation(out: string): { accuracy?: number; loss?: number } {
  const path = join(out, metricsFiles.jsonl);
  if (!existsSync(path)) return {};
  const evaluated = readMetrics(path).filter((row) => typeof row.test_accuracy === "number");
  const row = evaluated.at(-1);
  return row === undefined ? {} : { accuracy: row.test_accuracy as number, loss: row.test_loss as number };
}

type PlotTitle = { name: string; title: string; caption: readonly string[]; metrics: readonly PlotMetric[] };

async function writeRunPlots(out: string, { name, title, caption, metrics }: PlotTitle): Promise<void> {
  const rows = readMetrics(join(out, metricsFiles.jsonl));
  try {
    await writePlots(out, [{ name, rows }], { title, caption, metrics });
  } catch (error) {
    throw fileFault(error, out, "write the plot");
  }
}

/**
 * After a non-finite round: saves the last good state as a checkpoint (unless `save` is
 * undefined: it is on disk already) and the plot, so nothing since the last checkpoint is
 * lost. A failure here is reported, not thrown: the FT303 that led here is the error to show.
 */
async function keepLastGoodRound(
  round: number,
  save: (() => Promise<string>) | undefined,
  progress: RoundProgress,
  out: string,
  plotTitle: PlotTitle,
): Promise<void> {
  try {
    const path = save === undefined ? "already saved" : await save();
    await writeRunPlots(out, plotTitle);
    progress.log(`kept the last good state, round ${round} (${path}), and the plot of rounds 1-${round}`);
  } catch (error) {
    progress.log(`could not keep the last good state of round ${round}: ${(error as Error).message}`);
  }
}
