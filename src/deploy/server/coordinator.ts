/**
 * `fedtensor serve`'s run: the rounds of a run config (the same options as `fedtensor run`)
 * with real clients. Each round waits for clients, samples its cohort from those connected
 * (seeded by the run's seed and the round), has the cohort's members run the client part
 * (tasks.ts), merges, reports and updates at the server (the round runner of src/lib/run, whose
 * chunks are the members), evaluates on the test set, and writes metrics, checkpoints and
 * plots in the run folder, locked for the whole run, with its log (serve.log). With --resume it
 * continues from the folder's latest checkpoint; the clients reconnect by themselves. When the
 * last round is done every client is told the run finished. The operator's view (admin.ts)
 * follows the run's step and rounds.
 */
import { refuseOverMaxEpsilon } from "../../lib/run/plan.js";
import * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { flatten, unflatten } from "../../front/tree.js";
import { useBackend } from "../../runtime/backend.js";
import type { RoundSample } from "../../lib/data/federated.js";
import type { HostData } from "../../lib/data/host-tensor.js";
import { Rng } from "../../lib/random.js";
import { loadLatestCheckpoint, writeCheckpoint, type TensorTree } from "../../lib/run/checkpoint.js";
import { checkSameRun } from "../../lib/run/checkpoint-match.js";
import { isStoredTensor } from "../../lib/run/checkpoint-types.js";
import { algorithmName, type RunConfig } from "../../lib/run/config.js";
import { lockRunFolder } from "../../lib/run/lock.js";
import { metricsFiles, MetricsWriter, readMetrics, type MetricsRow } from "../../lib/run/metrics.js";
import { roundLearningRates } from "../../lib/run/optimizers.js";
import { writePlots } from "../../lib/run/plot.js";
import { runnerFor, type DeviceTree, type TrainingState } from "../../lib/run/rounds.js";
import { makeRunFolder, prepareNewRunFolder } from "../../lib/run/run-folder.js";
import { RunEvaluation } from "../../lib/run/run-evaluation.js";
import { isRobustRun } from "../../lib/run/robust.js";
import { featureShapeFor, federatedData, modelFor } from "../../lib/run/setup.js";
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { stepsFor } from "../client/batches.js";
import { WIRE_VERSION, type RunInfo } from "../protocol/messages.js";
import { OperatorView } from "./admin.js";
import { defaultMaxExamples } from "./claims.js";
import type { ClientRegistry, Member } from "./clients.js";
import { startServer, type ServerSettings } from "./http.js";
import type { TokenReload } from "./tokens.js";
import { RoundAborted } from "./round-aborted.js";
import { RoundTasks, type RoundTraffic } from "./tasks.js";
import { servedDistributedDp } from "./distributed-dp.js";
import { checkRangeSettings, checkShareSettings, rangesOf, type RangeSettings, type ShareSettings } from "./secure.js";
import { ClientStateStore } from "../../lib/run/client-state.js";

/** What the caller can do to a running server (the CLI's SIGHUP handler). */
export interface ServerControl {
  /** Puts a reread --client-tokens in force; revoked clients are disconnected. */
  reloadTokens(fresh: ReadonlyMap<string, string>): TokenReload;
}

export interface ServeSettings extends Omit<ServerSettings, "run" | "demoData" | "onMessage" | "onLeave" | "maxUpdateBytes" | "maxSecAggBytes" | "bounds" | "operator"> {
  /** The most examples a client may claim (claims.ts); the largest client of the run's partition when absent. */
  readonly maxClientExamples?: number;
  /** How long each member has to answer a round's task. */
  readonly deadlineMs: number;
  /** How long a round waits for clients-per-round clients once --min-clients are connected. */
  readonly joinWaitMs: number;
  /** SecAgg+'s num_shares and reconstruction_threshold (secure and distributed-dp rounds); the defaults when absent. */
  readonly shares?: ShareSettings;
  /** SecAgg+'s clipping_range, quantization_range and modulus_range (secure rounds only); Flower's defaults when absent. */
  readonly ranges?: RangeSettings;
  /** Called with the server's URL once it listens, and its controls. */
  readonly onListening?: (url: string, control: ServerControl) => void;
}

export interface ServeResult {
  readonly rounds: number;
  readonly accuracy: number | undefined;
  readonly outDir: string;
}

/**
 * Algorithms whose round streams through its MapReduce form, so their client part can run at
 * the clients (checked with two served clients; FedYogi and FedAdagrad share FedAdam's runner).
 * FedPer, Ditto and SCAFFOLD keep per-client state, which the clients keep themselves (their part reads
 * and writes it; the server never gets it: docs/deployment.md "Client state"). Mime and
 * MimeLite run their cohort whole, AFL weights each client by id at the server: not servable.
 */
const servable = new Set(["fedavg", "fedsgd", "fedprox", "fedadam", "fedyogi", "fedadagrad", "fedavgm", "diloco", "qffl", "fedper", "ditto", "scaffold"]);

/** Algorithms whose accumulator is linear sums only (weighted means): SecAgg+ can sum it. */
const linear = new Set(["fedavg", "fedsgd", "fedprox", "fedper", "ditto", "scaffold"]);

const isTensor = (x: unknown): x is tf.Tensor => x instanceof tf.Tensor;

async function toHost(tree: DeviceTree): Promise<TensorTree> {
  const { leaves, def } = flatten(tree, isTensor, "server state");
  return unflatten(def, await Promise.all(leaves.map(async (t) => ({ shape: t.shape, data: (await t.data()) as Float32Array })))) as TensorTree;
}
function toDevice(tree: TensorTree): DeviceTree {
  const { leaves, def } = flatten(tree, isStoredTensor, "server state", "float32 tensors");
  return unflatten(def, leaves.map((t) => tf.tensor(t.data, [...t.shape], "float32"))) as DeviceTree;
}

export async function serve(config: RunConfig, settings: ServeSettings): Promise<ServeResult> {
  if (config.aggregator !== "fedavg" && config.aggregator !== "secure" && config.aggregator !== "distributed-dp") throw ftError("FT305", { option: "--aggregator", why: `fedtensor serve merges with the plain weighted sum (fedavg), SecAgg+ (secure) or distributed DP over SecAgg+ (distributed-dp), not ${config.aggregator}` });
  if (config.aggregator !== "fedavg" && !linear.has(config.algorithm)) throw ftError("FT305", { option: "--aggregator", why: `${config.aggregator} rounds sum the clients' accumulators with SecAgg+, which needs a weighted-mean algorithm (${[...linear].join(", ")}), not ${config.algorithm}` });
  if (isRobustRun(config)) throw ftError("FT305", { option: "--aggregator", why: "robust aggregators, attackers and quantized updates are simulations of `fedtensor run`; serve merges plain or secure sums" });
  if (!servable.has(config.algorithm)) throw ftError("FT305", { option: "--algorithm", why: `${config.algorithm} runs its cohort whole or weights clients at the server, so its client part cannot run at the clients; serve runs ${[...servable].join(", ")}` });
  if (settings.shares !== undefined && (settings.shares.num_shares !== undefined || settings.shares.reconstruction_threshold !== undefined)) {
    if (config.aggregator === "fedavg") throw ftError("FT305", { option: settings.shares.num_shares === undefined ? "--reconstruction-threshold" : "--num-shares", why: "SecAgg+'s parameters need --aggregator secure or distributed-dp" });
    checkShareSettings(settings.shares, config.minClients, config.clientsPerRound);
  }
  if (settings.shares?.key_rounds !== undefined && config.aggregator === "fedavg") throw ftError("FT305", { option: "--key-rounds", why: "SecAgg+'s key reuse needs --aggregator secure or distributed-dp" });
  const rangeFlag = rangeFlagGiven(settings.ranges);
  // Distributed DP's codec quantizes on the client and fixes the modulus from --ddp-bits: the float path's ranges do not exist there.
  if (rangeFlag !== undefined && config.aggregator !== "secure")
    throw ftError("FT305", { option: rangeFlag, why: config.aggregator === "fedavg" ? "SecAgg+'s ranges need --aggregator secure" : "with --aggregator distributed-dp the codec quantizes each update and --ddp-bits fixes the modulus; SecAgg+'s ranges apply to --aggregator secure" });
  if (config.aggregator === "secure") checkRangeSettings(settings.ranges ?? {}, config.clientsPerRound);
  await makeRunFolder(config.out);
  const lock = await lockRunFolder(config.out);
  try {
    return await serveLocked(config, settings);
  } finally {
    await lock.release();
  }
}

/** The first of --clipping-range, --quantization-range, --modulus-range given, for the refusals. */
function rangeFlagGiven(ranges: RangeSettings | undefined): string | undefined {
  if (ranges?.clipping_range !== undefined) return "--clipping-range";
  if (ranges?.quantization_range !== undefined) return "--quantization-range";
  if (ranges?.modulus_range !== undefined) return "--modulus-range";
  return undefined;
}

async function serveLocked(config: RunConfig, given: ServeSettings): Promise<ServeResult> {
  const resumed = config.resume ? await loadLatestCheckpoint(config.out) : undefined;
  if (config.resume && resumed === undefined) throw ftError("FT304", { path: config.out, why: "--resume found no checkpoint there; serve without --resume to start the run" });
  // The same guard as `fedtensor run --resume`: the checkpoint must be of this folder's run.
  if (resumed !== undefined) await checkSameRun(config.out, resumed);
  if (resumed === undefined) await prepareNewRunFolder(config.out, config.overwrite);
  // Every line also goes to the run folder's serve.log (appended to on --resume), with its time.
  const logFile = createWriteStream(join(config.out, logFileName), { flags: "a", mode: 0o600 });
  const log = (line: string) => {
    given.log(line);
    logFile.write(`${new Date().toISOString()} ${line}\n`);
  };
  const settings: ServeSettings = { ...given, log };
  try {
    return await serveLogged(config, settings, resumed);
  } finally {
    await new Promise((resolve) => logFile.end(resolve));
  }
}

/** The run folder's log of `fedtensor serve`. */
export const logFileName = "serve.log";

async function serveLogged(config: RunConfig, settings: ServeSettings, resumed: Awaited<ReturnType<typeof loadLatestCheckpoint>>): Promise<ServeResult> {
  const log = settings.log;
  await useBackend(config.backend);
  const model = modelFor(config);
  // --max-epsilon: priced before any data is read (src/lib/run/plan.ts).
  refuseOverMaxEpsilon(config);
  // The server evaluates on the test set and serves demo partitions to browser tabs; the clients train on their own copies.
  const data = federatedData({ ...config, clientHoldout: 0 });
  const featureShape = featureShapeFor(model, data.train.featureShape);
  // --aggregator secure selects SecAgg+ between the clients (tasks.ts); the round program is the plain one, whose sums it computes.
  const runConfig: RunConfig = { ...config, aggregator: "fedavg", chunkClients: 1 };
  const runner = runnerFor(runConfig, model, data);
  const learningRate = roundLearningRates(config);
  const rng = Rng.fromSeed(config.seed);
  const evaluation = new RunEvaluation(model, data, { ...config, clientHoldout: 0 }, featureShape, rng);
  let state: TrainingState;
  let firstRound = 0;
  if (resumed !== undefined) {
    const stored = resumed.checkpoint.serverState as { params: TensorTree; server: TensorTree };
    state = { params: toDevice(stored.params), server: toDevice(stored.server), clients: new ClientStateStore() };
    firstRound = resumed.checkpoint.round;
    log(`resumed from round ${firstRound} (${resumed.path})`);
  } else {
    const params = model.init(rng.fork("init"));
    state = { params: toDevice(params), server: toDevice(runner.initialServerState(params)), clients: new ClientStateStore() };
  }
  const metrics = resumed === undefined ? MetricsWriter.create(config.out) : MetricsWriter.resume(config.out, firstRound);
  const save = async (round: number, row: MetricsRow | undefined) => {
    const serverState = { params: await toHost(state.params), server: await toHost(state.server), clients: {} };
    return writeCheckpoint(config.out, { round, serverState, rngState: { seed: config.seed }, config: config as never, ...(row === undefined ? {} : { metricsRow: row as never }) }, { keep: config.keepCheckpoints });
  };
  if (resumed === undefined) await save(0, undefined);

  const run: RunInfo = {
    name: config.out.split("/").filter(Boolean).at(-1) ?? "run",
    algorithm: algorithmName(config),
    model: config.model,
    batchSize: config.batchSize,
    epochs: config.localEpochs,
    featureShape: [...featureShape],
    data: { dataset: config.dataset, partition: config.partition, clients: config.clients, ...(config.alpha === undefined ? {} : { alpha: config.alpha }), seed: config.seed },
    aggregator: config.aggregator as NonNullable<RunInfo["aggregator"]>,
    rounds: config.rounds,
    // The cohort's floor each client holds the secure rounds' setups to (FT372).
    ...(config.aggregator === "fedavg" ? {} : { minClients: Math.max(2, config.minClients) }),
  };
  const operator = new OperatorView({ name: run.name, algorithm: run.algorithm, rounds: config.rounds, aggregator: config.aggregator });
  const bounds = { maxExamples: settings.maxClientExamples ?? defaultMaxExamples(data.clientIndices) };
  const ddp = config.aggregator === "distributed-dp" ? await servedDistributedDp(config, resumed !== undefined, log) : undefined;
  const tasks = new RoundTasks({ deadlineMs: settings.deadlineMs, minClients: config.minClients, batchSize: config.batchSize, featureShape, secure: config.aggregator !== "fedavg", shares: settings.shares, ranges: settings.ranges, ...(ddp === undefined ? {} : { ddp }), log });
  // An update is the accumulator: about as large as the model and its optimiser's sums, well under this bound.
  const parameters = flatten(state.params, isTensor, "params").leaves.reduce((n, t) => n + t.size, 0);
  operator.watchSecureSum(() => tasks.secureProgress());
  const server = await startServer({ ...settings, run, bounds, operator, maxUpdateBytes: 4 * (4 * parameters + 1024) + 65536, maxSecAggBytes: 6 * (4 * parameters + 1024) + 65536, demoData: data, onMessage: (m) => tasks.onMessage(m), onLeave: (m) => tasks.onLeave(m) });
  settings.onListening?.(server.url, { reloadTokens: (fresh) => server.registry.reload(fresh) });
  log(`serving ${run.algorithm} (${config.model}, ${config.dataset}) at ${server.url}; browser clients at ${server.url.replace(/^ws/, "http").replace(/\/fedtensor$/, "")}/client`);
  log(`client claims bounded: at most ${bounds.maxExamples} examples per client (--max-client-examples); operator endpoints ${settings.adminToken === undefined ? "off (no --admin-token-file)" : "/healthz, /status and /metrics, with the admin token"}; log in ${join(config.out, logFileName)}`);
  if (config.aggregator === "secure") {
    const { clipping_range, quantization_range, modulus_range } = rangesOf(settings.ranges);
    log(`SecAgg+ ranges: clipping_range ${clipping_range}, quantization_range ${quantization_range}, modulus_range ${modulus_range} (a step of ${(2 * clipping_range) / quantization_range} per client and value)`);
  }
  let accuracy: number | undefined;
  try {
    for (let round = firstRound + 1; round <= config.rounds; round++) {
      const started = performance.now();
      operator.setStep("waiting for clients", round);
      const cohort = await sampleCohort(server.registry, config, settings, rng, round);
      operator.setStep("training");
      const traffic: RoundTraffic = { merged: 0, dropped: 0, discarded: 0, bytesOut: 0, bytesIn: 0 };
      const sample = cohortSample(cohort, config);
      let loss: number | null = null;
      try {
        const next = await runner.round(state, sample, { ...runConfig, lr: learningRate(round) }, { round, engine: tasks.engineFor(round, cohort, traffic) });
        if (next.loss !== undefined) {
          loss = (await next.loss.data())[0]!;
          next.loss.dispose();
        }
        disposeReplaced(state, next.state);
        state = next.state;
      } catch (error) {
        if (!(error instanceof RoundAborted)) throw error;
        log(`round ${round} skipped: ${error.message}`);
      }
      const evaluated = round === config.rounds || round % Math.max(1, config.evalEvery) === 0;
      operator.setStep("evaluating");
      let test: { accuracy: number; loss: number } | undefined;
      if (evaluated) {
        const out = await evaluation.test(state.params);
        test = { accuracy: (await out.accuracy.data())[0]!, loss: (await out.loss.data())[0]! };
        tf.dispose([out.accuracy, out.loss]);
        accuracy = test.accuracy;
      }
      const row = { round, train_loss: loss, clients: traffic.merged, dropped: traffic.dropped, test_accuracy: test?.accuracy ?? null, test_loss: test?.loss ?? null, bytes_to_clients: traffic.bytesOut, bytes_from_clients: traffic.bytesIn, ...(config.aggregator === "secure" ? { sum_discarded: traffic.discarded } : {}), ...(ddp === undefined ? {} : ddp.columns(round, tasks.accumulatorLength)), seconds: (performance.now() - started) / 1000 };
      // Rows of a private run name the accountant, as `fedtensor run`'s do (not in rows of runs from before it was recorded).
      metrics.append(ddp === undefined || metrics.hasColumn("accountant") === false ? row : { ...row, accountant: ddp.accountant });
      const epsilon = "epsilon" in row ? { epsilon: row.epsilon as number | null } : {};
      operator.roundFinished({ round, merged: traffic.merged > 0, clients: traffic.merged, dropped: traffic.dropped, trainLoss: loss, testAccuracy: test?.accuracy ?? null, seconds: row.seconds, bytesToClients: traffic.bytesOut, bytesFromClients: traffic.bytesIn, ...epsilon });
      const end = { v: WIRE_VERSION, type: "round-end", round, merged: traffic.merged > 0, clients: traffic.merged, loss, ...epsilon };
      server.broadcast(cohort, end);
      log(`round ${round}/${config.rounds}: ${traffic.merged} of ${cohort.length} clients merged${loss === null ? "" : `, train loss ${loss.toFixed(4)}`}${test === undefined ? "" : `, test accuracy ${(test.accuracy * 100).toFixed(2)}%`} (${row.seconds.toFixed(1)} s)`);
      operator.setStep("checkpointing");
      if ((config.checkpointEvery > 0 && round % config.checkpointEvery === 0) || round === config.rounds) await save(round, row);
    }
    operator.setStep("finished");
    // Told, the clients stop instead of waiting for a server that will not come back.
    server.registry.finish(config.rounds);
    log(`run finished after ${config.rounds} rounds; every connected client was told`);
  } finally {
    metrics.close();
    await server.close();
    tf.dispose([state.params, state.server] as never);
  }
  const rows = readMetrics(join(config.out, metricsFiles.jsonl));
  await writePlots(config.out, [{ name: `${run.algorithm} ${model.name}`, rows }], { title: `${run.algorithm} on ${config.dataset} (${model.name}), served to real clients` });
  return { rounds: config.rounds, accuracy, outDir: config.out };
}

/** Disposes the tensors of `replaced` that `kept` does not share. */
function disposeReplaced(replaced: TrainingState, kept: TrainingState): void {
  const keep = new Set(flatten({ p: kept.params, s: kept.server }, isTensor, "state").leaves);
  for (const t of flatten({ p: replaced.params, s: replaced.server }, isTensor, "state").leaves) if (!keep.has(t)) t.dispose();
}

/**
 * The round's cohort: clients-per-round of the connected clients, drawn from the round's fork
 * of the seed, once --min-clients are connected and either clients-per-round are or the join
 * wait has passed.
 */
async function sampleCohort(registry: ClientRegistry, config: RunConfig, settings: ServeSettings, rng: Rng, round: number): Promise<Member[]> {
  const least = Math.max(1, config.minClients);
  let enoughSince: number | undefined;
  let told = 0;
  for (;;) {
    const members = registry.connected();
    if (members.length >= least) enoughSince ??= Date.now();
    else enoughSince = undefined;
    if (members.length >= config.clientsPerRound || (enoughSince !== undefined && Date.now() - enoughSince >= settings.joinWaitMs)) {
      const size = Math.min(config.clientsPerRound, members.length);
      const chosen = rng.fork(`round:${round}`).fork("cohort").sample(members.length, size).sort();
      return Array.from(chosen, (i) => members[i]!);
    }
    if (Date.now() - told > config.waitNotice * 1000) {
      settings.log(`round ${round}: waiting for clients (${registry.size} connected, ${members.length} of them ready; --min-clients ${least}, --clients-per-round ${config.clientsPerRound})`);
      told = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The cohort as the round runner sees it: positions 0..n-1, each member's batches; its data stays at the member. */
function cohortSample(cohort: readonly Member[], config: RunConfig): RoundSample<HostData> {
  return {
    clients: Int32Array.from(cohort, (_, i) => i),
    dropped: new Int32Array(0),
    steps: (i) => stepsFor(cohort[i]!.examples, config.localEpochs, config.batchSize),
    batch: () => {
      throw ftError("FT302", { what: "a served round", why: "its clients' data is at the clients; the round runs through their tasks only" });
    },
  };
}
