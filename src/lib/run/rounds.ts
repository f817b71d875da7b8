/**
 * How `fedtensor run` drives each algorithm: its round program with the run's aggregator
 * (--aggregator, src/lib/run/aggregator-chain.ts), the state it keeps at the server besides
 * the model (optimiser moments, a momentum buffer, the aggregator's clip), and the state some
 * algorithms keep per client between that client's rounds (SCAFFOLD's controls, held on the
 * host and handed to the round for its cohort only, each chunk its clients' rows: to a worker
 * with the chunk under --engine).
 *
 * One runner serves every algorithm that takes an aggregator: it feeds the round program the
 * algorithm's server inputs and the aggregator's (its state, the dp stage's noise multiplier
 * and expected cohort, the key and round, the attackers, distributed DP's clients' keys), and
 * keeps both states at the server. The aggregator's key is the run's secret's
 * (src/lib/privacy/secret.ts) when the chain releases (dp's noise, secure's masks, distributed
 * DP's rotation; never the seed's), the seed's otherwise (simulated attacks, quantization); it
 * is folded with the round inside the program, so a resumed run draws what an uninterrupted one
 * does. Rounds whose chain compares the clients' updates (the robust stages) run the whole
 * cohort in this process (FT322 otherwise); the others stream (src/lib/run/cohort.ts), the
 * attackers' flags and the clients' keys with them as per-client inputs.
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../../errors/error.js";
import { aggregatorOf, type Aggregator } from "../aggregators/aggregator.js";
import { dilocoProgram } from "../algorithms/diloco.js";
import { fedAvgProgram } from "../algorithms/fedavg.js";
import { fedAvgMProgram } from "../algorithms/fedavgm.js";
import { fedOptProgram } from "../algorithms/fedopt.js";
import { fedProxProgram } from "../algorithms/fedprox.js";
import { fedSgdProgram } from "../algorithms/fedsgd.js";
import { scaffoldProgram } from "../algorithms/scaffold.js";
import { aflProgram, initialLambda } from "../algorithms/afl.js";
import { initialMimeState, mimeProgram, type MimeVariant } from "../algorithms/mime.js";
import { qfflProgram } from "../algorithms/qffl.js";
import { filledLike, initialAdaptiveState } from "../algorithms/server-optimizers.js";
import type { AnyModel } from "../algorithms/types.js";
import type { RoundSample } from "../data/federated.js";
import { elementCount, type HostData } from "../data/host-tensor.js";
import type { HostParams } from "../models/model.js";
import { runStages } from "./aggregator-chain.js";
import type { TensorTree } from "./checkpoint.js";
import { dittoProgram } from "../algorithms/ditto.js";
import { fedPerProgram, personalNames } from "../algorithms/fedper.js";
import { hostStateOf, stackedStates, stageOutputs, type ClientState, type ClientStateStore } from "./client-state.js";
import { cohortData, runOnCohort, type ChunkEngine, type ChunkState, type PerClientInputs } from "./cohort.js";
import type { RunConfig } from "./config.js";
import { clientOptimizerFor, clientTraining, mimeBaseOptimizerFor } from "./optimizers.js";
import { countStddevOf, expectedClientsOf, isDpRun, releasedLength, updateNoiseMultiplier } from "./privacy.js";
import { maliciousClients, requireWholeCohort, seedKey } from "./robust.js";
import { RunSecret } from "../privacy/secret.js";

type Params = HostParams<Record<string, unknown>>;
type RoundProgramLike = { readonly ir: unknown; run(inputs: never, options: never): Promise<unknown> };
type Outputs = Record<string, unknown> & { params: unknown; loss?: TfTensor };

/** A run's state on the device between rounds. */
export type DeviceTree = TfTensor | readonly DeviceTree[] | { readonly [key: string]: DeviceTree };
export interface TrainingState {
  readonly params: DeviceTree;
  /** State at the server besides the parameters: the algorithm's, the aggregator's (a dp stage's clip), or { algorithm, aggregator } when both keep one ({} when none does). */
  readonly server: DeviceTree;
  /** Per-client state on the host, by client id (empty when the algorithm keeps none); a round's new states are staged until the run commits them. */
  readonly clients: ClientStateStore;
}

export interface RoundResult {
  readonly state: TrainingState;
  /** The cohort's mean training loss; none under a releasing aggregator (dp, secure), whose clients' losses are private. */
  readonly loss: TfTensor | undefined;
}

/** Where a round stands: its number, and the engine that runs its chunks when not in this process. */
export interface RoundContext {
  readonly round: number;
  readonly engine?: ChunkEngine;
}

export interface RoundRunner {
  /** The algorithm's server state for a fresh run, from the initial parameters. */
  initialServerState(params: Params): TensorTree;
  /** One round (`at.round`, from 1) on the sampled cohort, whose data the runner copies in (by chunk when it streams, through `at.engine` when workers run the chunks). */
  round(state: TrainingState, cohort: RoundSample<HostData>, config: RunConfig, at: RoundContext): Promise<RoundResult>;
}

/** What an algorithm adds to the aggregated runner. */
export interface AlgorithmRound {
  readonly program: RoundProgramLike;
  /** The algorithm's own server state for a fresh run; none when absent. */
  readonly initialState?: (params: Params) => TensorTree;
  /** Its server inputs besides params and lr, from its state. */
  readonly serverInputs?: (config: RunConfig, state: DeviceTree) => Record<string, unknown>;
  /** Its next state from the program's outputs (and their names it consumes, disposed otherwise). */
  readonly nextState?: (out: Outputs) => DeviceTree;
  /** Outputs the runner disposes (AFL's worst loss). */
  readonly unused?: readonly string[];
  /** CLIENTS inputs besides the data, by place in the cohort (AFL's client ids). */
  readonly perClient?: (clients: Int32Array) => PerClientInputs;
  /**
   * Client state (keepOnClients): the program's input and kept output named `input`, a record
   * of tensors, kept per client id between rounds; a client never seen starts from
   * `initial(params)`.
   */
  readonly clientState?: { readonly input: string; initial(params: DeviceTree): Promise<ClientState> };
  /** Whether --server-lr scales the program's step here (for programs without a serverLr input). */
  readonly scalesByServerLr: boolean;
}

/**
 * The server learning rate for algorithms whose program has none (FedAvg, FedProx, FedSGD):
 * the aggregated update scaled, params + serverLr (new - params). At 1 (the default) it is
 * the program's result as it is.
 */
export function withServerLr(old: DeviceTree, next: DeviceTree, serverLr: number): DeviceTree {
  if (serverLr === 1) return next;
  const scaled = tf.tidy(() => mapTrees(old, next, (o, n) => tf.add(o, tf.mul(tf.sub(n, o), serverLr))) as never) as DeviceTree;
  tf.dispose(next as never);
  return scaled;
}

function mapTrees(a: DeviceTree, b: DeviceTree, f: (x: TfTensor, y: TfTensor) => TfTensor): DeviceTree {
  if (a instanceof tf.Tensor) return f(a, b as TfTensor);
  if (Array.isArray(a)) return a.map((x, i) => mapTrees(x, (b as DeviceTree[])[i]!, f));
  const out: Record<string, DeviceTree> = {};
  for (const [k, x] of Object.entries(a)) out[k] = mapTrees(x, (b as Record<string, DeviceTree>)[k]!, f);
  return out;
}

/**
 * The server state as the run keeps it: the algorithm's alone, or the aggregator's alone
 * (DP-FedAvg's { clip }, as it has always been), or both as { algorithm, aggregator }.
 */
function joined(algorithm: DeviceTree | TensorTree | undefined, aggregator: Record<string, unknown>): DeviceTree {
  if (Object.keys(aggregator).length === 0) return (algorithm ?? {}) as DeviceTree;
  if (algorithm === undefined) return aggregator as DeviceTree;
  return { algorithm, aggregator } as DeviceTree;
}

/** The clip norm of a run's dp stage, from the server state. */
export function clipOf(server: DeviceTree): TfTensor {
  const tree = server as { clip?: TfTensor; aggregator?: { clip: TfTensor } };
  return tree.clip ?? tree.aggregator!.clip;
}

/**
 * The cohort an empty DP round runs on: one member without examples (all its batch slots
 * masked out, shaped as client 0's), which the dp stage multiplies out. Its count is 1 only
 * so that the round's input check sees a member; the dp stage does not read counts.
 */
function standInCohort(empty: RoundSample<HostData>): RoundSample<HostData> {
  const batch = () => {
    const like = empty.batch([0], 1);
    for (const t of [like.x, like.y, like.mask]) t.data.fill(0);
    return { ...like, count: { shape: [1], data: Float32Array.of(1) } };
  };
  return { clients: Int32Array.of(0), dropped: empty.dropped, steps: () => 1, batch };
}

/** The aggregator's server inputs for a round besides its state: the dp stage's hypers, the key and round, the attack's scale. */
function aggregatorInputs(aggregator: Aggregator, config: RunConfig, round: number, key: readonly number[] | Int32Array): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  const wants = (name: string) => name in aggregator.inputs;
  if (wants("noiseMultiplier")) Object.assign(inputs, { noiseMultiplier: updateNoiseMultiplier(config), expectedClients: expectedClientsOf(config) });
  if (wants("attackScale")) inputs.attackScale = config.attackScale ?? 1;
  if (wants("key")) Object.assign(inputs, { key, round });
  if (wants("targetQuantile")) Object.assign(inputs, { targetQuantile: config.dpTargetQuantile, clipLr: config.dpClipLr, countStddev: countStddevOf(config) });
  return inputs;
}

/** The runner of an algorithm's round program with the run's aggregator. */
export function aggregatedRunner(algorithm: AlgorithmRound, aggregator: Aggregator, config: RunConfig, secret: RunSecret): RoundRunner {
  const dp = isDpRun(config);
  const purpose = "clientKeys" in aggregator.inputs ? "distributed-dp" : dp ? "dp-noise" : "secure-masks";
  const key = aggregator.releases ? secret.key(purpose) : seedKey(config.seed);
  const stateNames = Object.keys(aggregator.state);
  return {
    initialServerState: (params) => joined(algorithm.initialState?.(params), aggregator.initialize() as never) as unknown as TensorTree,
    async round(state, cohort, cfg, at: RoundContext) {
      const server = state.server as Record<string, DeviceTree>;
      const both = algorithm.initialState !== undefined && stateNames.length > 0;
      const algorithmState = both ? server.algorithm! : (state.server as DeviceTree);
      const aggregatorState = Object.fromEntries(stateNames.map((name) => [name, both ? (server.aggregator as Record<string, DeviceTree>)[name] : server[name]]));
      const serverInputs = {
        params: state.params,
        lr: cfg.lr,
        ...algorithm.serverInputs?.(cfg, algorithmState),
        ...aggregatorState,
        ...aggregatorInputs(aggregator, cfg, at.round, key),
      };
      // An empty Poisson cohort still releases (the noise alone): skipping the round would release its emptiness.
      const sample = isDpRun(cfg) && cohort.clients.length === 0 ? standInCohort(cohort) : cohort;
      const kept = algorithm.clientState;
      const clientState = kept === undefined ? undefined : { input: kept.input, rows: stackedStates(state.clients, sample.clients, await kept.initial(state.params)) };
      const out = (await runRound(algorithm, aggregator, serverInputs, sample, sample === cohort, cfg, at, secret, clientState)) as Outputs;
      if (kept !== undefined) {
        // The stand-in member of an empty cohort is no client: its state is dropped. Served
        // clients (an engine that keeps client state) keep theirs: the result has none.
        if (sample === cohort && out[kept.input] !== undefined) await stageOutputs(state.clients, sample.clients, out[kept.input] as Record<string, TfTensor>);
        tf.dispose(out[kept.input] as never);
      }
      for (const name of algorithm.unused ?? []) tf.dispose(out[name] as never);
      const params = algorithm.scalesByServerLr ? withServerLr(state.params, out.params as DeviceTree, cfg.serverLr) : (out.params as DeviceTree);
      const nextAggregator = Object.fromEntries(stateNames.map((name) => [name, out[name]]));
      return { state: { ...state, params, server: joined(algorithm.nextState?.(out), nextAggregator) }, loss: out.loss };
    },
  };
}

/** The round on the cohort's sample (cohort.ts runOnCohort): streamed unless the chain or the algorithm needs it whole; `real` unless it is an empty cohort's stand-in. */
async function runRound(algorithm: AlgorithmRound, aggregator: Aggregator, serverInputs: Record<string, unknown>, sample: RoundSample<HostData>, real: boolean, cfg: RunConfig, at: RoundContext, secret: RunSecret, clientState?: ChunkState): Promise<unknown> {
  if (aggregator.wholeCohort) requireWholeCohort(cfg, sample.clients.length, at.engine !== undefined);
  const attackers = "malicious" in aggregator.inputs ? maliciousClients(cfg, at.round, sample.clients) : undefined;
  const malicious: PerClientInputs = attackers === undefined ? {} : { malicious: { shape: [sample.clients.length], data: Float32Array.from(sample.clients, (client) => (attackers.has(client) ? 1 : 0)) } };
  const engine = real ? at.engine : undefined;
  const perClient = { ...malicious, ...clientKeys(aggregator, sample.clients, at.round, secret), ...algorithm.perClient?.(sample.clients) };
  // Distributed DP on workers: each chunk's sum (all that Redis and the coordinator see of it) holds the calibrated noise.
  const groupMin = aggregator.stages.find((s) => s.kind === "distributed-dp")?.minClients;
  const onEngine = engine === undefined ? {} : { engine, ...(groupMin === undefined ? {} : { groupMin }) };
  return runOnCohort(algorithm.program as never, serverInputs, sample, { chunkClients: cfg.chunkClients, options: { backend: cfg.backend }, perClient, ...onEngine, ...(clientState === undefined ? {} : { clientState }) });
}

/**
 * Distributed DP's clients' own keys for their rounding and noise: derived from the run's
 * secret in this process; with --engine each worker draws its clients' keys from its own
 * CSPRNG (they are in no job).
 */
function clientKeys(aggregator: Aggregator, clients: Int32Array, round: number, secret: RunSecret): PerClientInputs {
  if (!("clientKeys" in aggregator.inputs)) return {};
  return { clientKeys: { shape: [clients.length, 2], data: Int32Array.from([...clients].flatMap((c) => secret.clientKey(round, c))), drawnByWorker: true } };
}

/** The run options every round program gets from the run config: its backend. */
export const runOptionsOf = (config: RunConfig) => ({ backend: config.backend });

/**
 * Algorithms whose program takes serverLr and its server state `name`, and returns the next
 * one: a momentum buffer (FedAvgM, DiLoCo), the server optimiser's state (FedOpt, Mime).
 */
const withServerState = (program: AlgorithmRound["program"], name: "buffer" | "state", initialState: (params: Params) => TensorTree): AlgorithmRound => ({
  program,
  initialState,
  serverInputs: (cfg, state) => ({ serverLr: cfg.serverLr, [name]: state }),
  nextState: (out) => out[name] as DeviceTree,
  scalesByServerLr: false,
});
const momentum = (program: AlgorithmRound["program"]) => withServerState(program, "buffer", (params) => filledLike(params, 0) as unknown as TensorTree);

const stateless = (program: AlgorithmRound["program"], serverInputs?: AlgorithmRound["serverInputs"]): AlgorithmRound => ({
  program,
  scalesByServerLr: true,
  ...(serverInputs === undefined ? {} : { serverInputs }),
});

/** Each algorithm's round with the aggregator. */
const algorithms: Readonly<Record<string, (model: AnyModel, config: RunConfig, aggregator: Aggregator) => AlgorithmRound>> = {
  fedavg: (model, config, aggregator) => stateless(fedAvgProgram(model, { ...clientTraining(config), aggregator }) as never),
  fedsgd: (model, _, aggregator) => stateless(fedSgdProgram(model, { aggregator }) as never),
  fedprox: (model, config, aggregator) => stateless(fedProxProgram(model, { ...clientTraining(config), aggregator }) as never, (cfg) => ({ mu: cfg.mu ?? 0.01 })),
  fedadam: (model, config, aggregator) => fedOpt(model, "adam", config, aggregator),
  fedyogi: (model, config, aggregator) => fedOpt(model, "yogi", config, aggregator),
  fedadagrad: (model, config, aggregator) => fedOpt(model, "adagrad", config, aggregator),
  diloco: (model, config, aggregator) => {
    const inner = clientOptimizerFor(config);
    return momentum(dilocoProgram(model, { momentum: config.outerMomentum ?? 0.9, aggregator, ...(inner === undefined ? {} : { innerOptimizer: inner }) }) as never);
  },
  fedavgm: (model, config, aggregator) => momentum(fedAvgMProgram(model, { momentum: config.serverMomentum ?? 0.9, ...clientTraining(config), aggregator }) as never),
  mime: (model, config, aggregator) => mime(model, "mime", config, aggregator),
  mimelite: (model, config, aggregator) => mime(model, "mimelite", config, aggregator),
  qffl: (model, _, aggregator) => stateless(qfflProgram(model, { aggregator }) as never, (cfg) => ({ q: cfg.q ?? 1 })),
  afl: afl,
  scaffold: (model, config, aggregator) => ({
    // N rather than |S|/N with the mean: with dropout, fewer than clientsPerRound clients report.
    program: scaffoldProgram(model, { aggregator, ...(aggregator.releases ? { participation: Math.min(1, expectedClientsOf(config) / config.clients) } : { totalClients: config.clients }) }) as never,
    initialState: (params) => filledLike(params, 0) as unknown as TensorTree,
    serverInputs: (cfg, state) => ({ serverLr: cfg.serverLr, control: state }),
    nextState: (out) => out.control as DeviceTree,
    clientState: { input: "clientControls", initial: async (params) => hostStateOf(params as never).then((p) => filledLike(p, 0) as never) },
    scalesByServerLr: false,
  }),
  fedper: (model, config, aggregator) => {
    const personal = personalNames(model, config.personalParams === undefined || config.personalParams === "head" ? {} : { personal: config.personalParams.split(",") });
    return {
      ...stateless(fedPerProgram(model, { ...clientTraining(config), aggregator, personal }) as never),
      clientState: { input: "heads", initial: (params) => hostStateOf(params as never, personal) },
    };
  },
  ditto: (model, config, aggregator) => ({
    ...stateless(dittoProgram(model, { ...clientTraining(config), aggregator }) as never, (cfg) => ({ lambda: cfg.dittoLambda ?? 0.1 })),
    clientState: { input: "personal", initial: (params) => hostStateOf(params as never) },
  }),
};

function fedOpt(model: AnyModel, optimizer: "adam" | "yogi" | "adagrad", config: RunConfig, aggregator: Aggregator): AlgorithmRound {
  const tau = config.tau ?? 1e-3;
  const program = fedOptProgram(model, { optimizer, beta1: config.beta1, beta2: config.beta2, tau, ...clientTraining(config), aggregator });
  return withServerState(program as never, "state", (params) => initialAdaptiveState(params, tau) as unknown as TensorTree);
}

/** Mime and MimeLite: the base optimiser's state (a step count and its moments) is the server state. */
function mime(model: AnyModel, variant: MimeVariant, config: RunConfig, aggregator: Aggregator): AlgorithmRound {
  const options = { baseOptimizer: mimeBaseOptimizerFor(config) };
  return withServerState(mimeProgram(model, variant, { ...options, aggregator }) as never, "state", (params) => initialMimeState(model, params, options) as unknown as TensorTree);
}

/**
 * Agnostic FL: lambda (one weight per client of --clients) is the server state; the cohort's
 * ids name their entries, a per-client input (`client`) that each chunk, or worker job, takes
 * its rows of.
 */
function afl(model: AnyModel, config: RunConfig, aggregator: Aggregator): AlgorithmRound {
  return {
    program: aflProgram(model, { clients: config.clients, ...clientTraining(config), aggregator }) as never,
    initialState: () => ({ lambda: initialLambda(config.clients) }),
    serverInputs: (cfg, state) => ({ aflLr: cfg.aflLr ?? 0.001, lambda: (state as { lambda: TfTensor }).lambda }),
    nextState: (out) => ({ lambda: out.lambda as TfTensor }),
    unused: ["worstLoss"],
    perClient: (clients) => ({ client: { shape: [clients.length], data: clients } }),
    scalesByServerLr: true,
  };
}

/** The number of a model's parameters (its specs are one level of named tensors). */
const parameterCount = (model: AnyModel): number => Object.values(model.params).reduce((n, spec) => n + elementCount(spec.shape as readonly number[]), 0);

/**
 * The runner of the configured algorithm with the configured aggregator; `data` gives secure
 * aggregation its clients' sizes, `secret` a private run its keys (a fresh one from the OS
 * when not given).
 */
export function runnerFor(config: RunConfig, model: AnyModel, data?: { readonly clientIndices: readonly ArrayLike<number>[] }, secret: RunSecret = RunSecret.generate()): RoundRunner {
  const largestClient = Math.max(0, ...(data?.clientIndices ?? []).map((c) => c.length));
  const aggregator = aggregatorOf(runStages(config, largestClient, releasedLength(config, parameterCount(model))), { initialClip: config.dpInitialClip ?? 0.1 });
  const make = algorithms[config.algorithm];
  if (make === undefined) throw ftError("FT305", { option: "algorithm", why: `no algorithm '${config.algorithm}' in this build` });
  return aggregatedRunner(make(model, config, aggregator), aggregator, config, secret);
}
