/**
 * How `fedtensor run` drives each algorithm: its round program, the state it keeps at the
 * server besides the model (optimiser moments, control variates, a momentum buffer), and the
 * state some algorithms keep per client between that client's rounds (SCAFFOLD's controls,
 * held on the host and handed to the round for its cohort only).
 */
import * as tf from "@tensorflow/tfjs";
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import { ftError } from "../../errors/error.js";
import type { ProgramIR } from "../../ir/types.js";
import { dpFedAvgProgram } from "../algorithms/dp-fedavg.js";
import { dilocoProgram } from "../algorithms/diloco.js";
import { fedAvgProgram } from "../algorithms/fedavg.js";
import { fedAvgMProgram } from "../algorithms/fedavgm.js";
import { fedOptProgram } from "../algorithms/fedopt.js";
import { fedProxProgram } from "../algorithms/fedprox.js";
import { fedSgdProgram } from "../algorithms/fedsgd.js";
import { scaffoldProgram } from "../algorithms/scaffold.js";
import { secureFedAvgProgram } from "../algorithms/secure-fedavg.js";
import { aflProgram, initialLambda } from "../algorithms/afl.js";
import { initialMimeState, mimeProgram, type MimeVariant } from "../algorithms/mime.js";
import { qfflProgram } from "../algorithms/qffl.js";
import { filledLike, initialAdaptiveState } from "../algorithms/server-optimizers.js";
import type { AnyModel } from "../algorithms/types.js";
import type { RoundSample } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import type { HostParam, HostParams } from "../models/model.js";
import type { TensorTree } from "./checkpoint.js";
import { cohortData, runOnCohort, type ChunkEngine } from "./cohort.js";
import type { RunConfig } from "./config.js";
import { clientOptimizerFor, clientTraining, mimeBaseOptimizerFor } from "./optimizers.js";
import { countStddevOf, expectedClientsOf, updateNoiseMultiplier } from "./privacy.js";
import { isRobustRun, robustRound } from "./robust.js";
import { RunSecret } from "../privacy/secret.js";

export type DeviceTree = TfTensor | readonly DeviceTree[] | { readonly [key: string]: DeviceTree };
type Params = HostParams<Record<string, unknown>>;

export interface TrainingState {
  readonly params: DeviceTree;
  /** Algorithm state at the server besides the parameters ({} when there is none). */
  readonly server: DeviceTree;
  /** Per-client state on the host, by client position ({} when the algorithm keeps none). */
  readonly clients: { readonly [client: string]: TensorTree };
}

export interface RoundResult {
  readonly state: TrainingState;
  /** The cohort's mean training loss; none from DP-FedAvg, whose clients' losses are private. */
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

/**
 * The server learning rate for algorithms whose program has none (FedAvg, FedProx, FedSGD):
 * the aggregated update scaled, params + serverLr (new - params). At 1 (the default) it is
 * the program's result as it is.
 */
function withServerLr(old: DeviceTree, next: DeviceTree, serverLr: number): DeviceTree {
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

/** Runners whose program takes the common inputs (plus `extra`) and returns { params, loss }. */
/** The run options every round program gets from the run config: its backend. */
export const runOptionsOf = (config: RunConfig) => ({ backend: config.backend });

type RoundProgramLike = { readonly ir: ProgramIR; run(inputs: never, options: never): Promise<unknown> };

/** Runs a round program on the cohort, streamed in chunks where it can be (src/lib/run/cohort.ts). */
const onCohort = <O>(program: RoundProgramLike, serverInputs: Record<string, unknown>, cohort: RoundSample<HostData>, config: RunConfig, engine: ChunkEngine | undefined) =>
  runOnCohort(program, serverInputs, cohort, { chunkClients: config.chunkClients, options: runOptionsOf(config), ...(engine === undefined ? {} : { engine }) }) as Promise<O>;

/** Runners with no server state whose program takes params, lr and `extra`'s inputs, and returns the next params and the loss. */
function plainRunner(program: RoundProgramLike, extra: (config: RunConfig, at: RoundContext) => object = () => ({})): RoundRunner {
  return {
    initialServerState: () => ({}),
    async round(state, cohort, config, at) {
      const out = await onCohort<{ params: unknown; loss: TfTensor }>(program, { params: state.params, lr: config.lr, ...extra(config, at) }, cohort, config, at.engine);
      return { state: { ...state, params: withServerLr(state.params, out.params as DeviceTree, config.serverLr) }, loss: out.loss };
    },
  };
}

/** Runners whose program takes serverLr and the server optimiser's `state`, and returns the next state: FedOpt, Mime. */
function serverStateRunner(program: RoundProgramLike, initialServerState: (params: Params) => TensorTree): RoundRunner {
  return {
    initialServerState,
    async round(state, cohort, cfg, { engine }) {
      const out = await onCohort<{ params: unknown; state: unknown; loss: TfTensor }>(program, { params: state.params, lr: cfg.lr, serverLr: cfg.serverLr, state: state.server }, cohort, cfg, engine);
      return { state: { ...state, params: out.params as DeviceTree, server: out.state as DeviceTree }, loss: out.loss };
    },
  };
}

function fedOptRunner(model: AnyModel, optimizer: "adam" | "yogi" | "adagrad", config: RunConfig): RoundRunner {
  const tau = config.tau ?? 1e-3;
  const program = fedOptProgram(model, { optimizer, beta1: config.beta1, beta2: config.beta2, tau, ...clientTraining(config) });
  return serverStateRunner(program, (params) => initialAdaptiveState(params, tau) as unknown as TensorTree);
}

/** Mime and MimeLite: the base optimiser's state (a step count and its moments) is the server state. */
function mimeRunner(model: AnyModel, variant: MimeVariant, config: RunConfig): RoundRunner {
  const options = { baseOptimizer: mimeBaseOptimizerFor(config) };
  return serverStateRunner(mimeProgram(model, variant, options), (params) => initialMimeState(model, params, options) as unknown as TensorTree);
}

/**
 * Agnostic FL: lambda (one weight per client of --clients) is the server state; the cohort's
 * positions name their entries. `client` is a CLIENTS input that the chunked MapReduce path
 * does not carry, so the cohort runs whole (as SCAFFOLD's).
 */
function aflRunner(model: AnyModel, config: RunConfig): RoundRunner {
  const program = aflProgram(model, { clients: config.clients, ...clientTraining(config) });
  return {
    initialServerState: () => ({ lambda: initialLambda(config.clients) }),
    async round(state, cohort, cfg) {
      const batches = cohort.batch(cohort.clients);
      const server = state.server as { lambda: TfTensor };
      const inputs = { params: state.params, ...cohortData(batches), client: { shape: [batches.clients.length], data: batches.clients }, lr: cfg.lr, aflLr: cfg.aflLr ?? 0.001, lambda: server.lambda };
      const out = await program.run(inputs as never, runOptionsOf(cfg));
      out.worstLoss.dispose();
      return { state: { ...state, params: withServerLr(state.params, out.params as DeviceTree, cfg.serverLr), server: { lambda: out.lambda } }, loss: out.loss };
    },
  };
}

/** Runners of the algorithms whose server state is a momentum buffer: FedAvgM and DiLoCo. */
function momentumRunner(program: ReturnType<typeof fedAvgMProgram>): RoundRunner {
  return {
    initialServerState: (params) => filledLike(params, 0) as unknown as TensorTree,
    async round(state, cohort, cfg, { engine }) {
      const out = await onCohort<{ params: unknown; buffer: unknown; loss: TfTensor }>(program, { params: state.params, lr: cfg.lr, serverLr: cfg.serverLr, buffer: state.server }, cohort, cfg, engine);
      return { state: { ...state, params: out.params as DeviceTree, server: out.buffer as DeviceTree }, loss: out.loss };
    },
  };
}

/** Stacks the cohort's per-client trees into CLIENTS host tensors [C, ...], a client never seen starting at zero. */
function stackClientStates(states: TrainingState["clients"], cohort: Int32Array, like: Params): Record<string, HostParam> {
  const stacked: Record<string, HostParam> = {};
  for (const [key, { shape, data }] of Object.entries(like)) {
    const out = new Float32Array(cohort.length * data.length);
    cohort.forEach((client, i) => {
      const own = (states[client] as Record<string, HostParam> | undefined)?.[key];
      if (own !== undefined) out.set(own.data, i * data.length);
    });
    stacked[key] = { shape: [cohort.length, ...shape], data: out };
  }
  return stacked;
}

async function unstackClientStates(tree: Record<string, TfTensor>, cohort: Int32Array, into: TrainingState["clients"]): Promise<TrainingState["clients"]> {
  const next: Record<string, TensorTree> = { ...into };
  const parts: Record<string, Record<string, HostParam>> = {};
  for (const [key, t] of Object.entries(tree)) {
    const data = (await t.data()) as Float32Array;
    const [, ...shape] = t.shape;
    const size = data.length / cohort.length;
    cohort.forEach((client, i) => {
      (parts[client] ??= {})[key] = { shape, data: data.slice(i * size, (i + 1) * size) };
    });
  }
  for (const [client, state] of Object.entries(parts)) next[client] = state;
  return next;
}

function scaffoldRunner(model: AnyModel, config: RunConfig): RoundRunner {
  // N rather than |S|/N: with dropout, fewer than clientsPerRound clients report.
  const program = scaffoldProgram(model, { totalClients: config.clients });
  let shapes: Params | undefined;
  return {
    initialServerState: (params) => {
      shapes = filledLike(params, 0);
      return shapes as unknown as TensorTree;
    },
    async round(state, cohort, cfg) {
      // SCAFFOLD returns each client's new control: no MapReduce form (FT314), so the cohort runs whole.
      const batches = cohort.batch(cohort.clients);
      shapes ??= Object.fromEntries(Object.entries(state.server as Record<string, TfTensor>).map(([k, t]) => [k, { shape: t.shape, data: new Float32Array(t.size) }]));
      const clientControls = stackClientStates(state.clients, batches.clients, shapes);
      const out = await program.run({
        params: state.params,
        ...cohortData(batches),
        lr: cfg.lr,
        serverLr: cfg.serverLr,
        control: state.server,
        clientControls,
      } as never, runOptionsOf(cfg));
      const clients = await unstackClientStates(out.clientControls as Record<string, TfTensor>, batches.clients, state.clients);
      tf.dispose(out.clientControls as never);
      return { state: { params: out.params as DeviceTree, server: out.control as DeviceTree, clients }, loss: out.loss };
    },
  };
}

/**
 * DP-FedAvg (--aggregator dp): the clip norm is server state (adaptive clipping updates it);
 * the noise key is the run's secret's (src/lib/privacy/secret.ts), never the seed's, folded
 * with the round number inside the program, so a resumed run that reads the same secret
 * draws the same noise as an uninterrupted one.
 */
function dpRunner(model: AnyModel, config: RunConfig, secret: RunSecret): RoundRunner {
  const adaptive = config.dpClip === "adaptive";
  const program = dpFedAvgProgram(model, { adaptive, ...clientTraining(config) });
  const clip = adaptive ? config.dpInitialClip! : (config.dpClip as number);
  const key = secret.key("dp-noise");
  const adaptiveInputs = adaptive ? { targetQuantile: config.dpTargetQuantile, clipLr: config.dpClipLr, countStddev: countStddevOf(config) } : {};
  return {
    initialServerState: () => ({ clip: { shape: [], data: Float32Array.of(clip) } }),
    async round(state, cohort, cfg, { round, engine }) {
      const server = state.server as { clip: TfTensor };
      const inputs = {
        params: state.params,
        lr: cfg.lr,
        clip: server.clip,
        noiseMultiplier: updateNoiseMultiplier(cfg),
        expectedClients: expectedClientsOf(cfg),
        key,
        round,
        ...adaptiveInputs,
      };
      // An empty Poisson cohort still releases (the noise alone): skipping the round would release its emptiness.
      const empty = cohort.clients.length === 0;
      const out = await onCohort<{ params: unknown; clip: TfTensor }>(program, inputs, empty ? standInCohort(cohort) : cohort, cfg, empty ? undefined : engine);
      return { state: { ...state, params: withServerLr(state.params, out.params as DeviceTree, cfg.serverLr), server: { clip: out.clip } }, loss: undefined };
    },
  };
}

/**
 * The cohort an empty DP round runs on: one member without examples (all its batch slots
 * masked out, shaped as client 0's), which the DP round multiplies out. Its count is 1 only
 * so that the round's input check sees a member; the DP round does not read counts.
 */
function standInCohort(empty: RoundSample<HostData>): RoundSample<HostData> {
  const batch = () => {
    const like = empty.batch([0], 1);
    for (const t of [like.x, like.y, like.mask]) t.data.fill(0);
    return { ...like, count: { shape: [1], data: Float32Array.of(1) } };
  };
  return { clients: Int32Array.of(0), dropped: empty.dropped, steps: () => 1, batch };
}

/**
 * Secure FedAvg (--aggregator secure): the weighted updates and weights are summed with
 * secureSum; the weights' declared range is the largest client's example count, and the
 * masks' key is the run's secret's (never the seed's) folded with the round number inside the
 * program, so every round has fresh masks and a resumed run the same ones. In one process
 * this is a simulation: the server holds the key every pair key derives from.
 */
function secureRunner(model: AnyModel, config: RunConfig, largestClient: number, secret: RunSecret): RoundRunner {
  const program = secureFedAvgProgram(model, {
    ...clientTraining(config),
    bits: config.secureBits!,
    clip: config.secureClip!,
    maxWeight: Math.max(1, largestClient),
    maxClients: config.clientsPerRound,
    ...(config.secureNeighbours ? { neighbours: config.secureNeighbours } : {}),
    minClients: config.secureGroupMin,
  });
  const key = secret.key("secure-masks");
  return {
    initialServerState: () => ({}),
    async round(state, cohort, cfg, { round, engine }) {
      // No loss: the clients' losses are private and reach the server through no secure sum.
      // Streamed in groups, through workers with --engine (docs/distributed.md).
      const out = await onCohort<{ params: unknown }>(program, { params: state.params, lr: cfg.lr, key, round }, cohort, cfg, engine);
      return { state: { ...state, params: withServerLr(state.params, out.params as DeviceTree, cfg.serverLr) }, loss: undefined };
    },
  };
}

/** FedAvg with a robust aggregator, attackers or quantized updates (src/lib/run/robust.ts): the whole cohort at once. */
function robustRunner(model: AnyModel, config: RunConfig): RoundRunner {
  const robust = robustRound(model, config, clientTraining(config));
  return {
    initialServerState: () => ({}),
    async round(state, cohort, cfg, { round, engine }) {
      const out = await robust.run(state.params, cohort, cfg, round, engine);
      return { state: { ...state, params: withServerLr(state.params, out.params as DeviceTree, cfg.serverLr) }, loss: out.loss };
    },
  };
}

const runners: Readonly<Record<string, (model: AnyModel, config: RunConfig) => RoundRunner>> = {
  fedavg: (model, config) => plainRunner(fedAvgProgram(model, clientTraining(config)) as never),
  fedsgd: (model) => plainRunner(fedSgdProgram(model) as never),
  fedprox: (model, config) => plainRunner(fedProxProgram(model, clientTraining(config)) as never, (cfg) => ({ mu: cfg.mu ?? 0.01 })),
  fedadam: (model, config) => fedOptRunner(model, "adam", config),
  fedyogi: (model, config) => fedOptRunner(model, "yogi", config),
  fedadagrad: (model, config) => fedOptRunner(model, "adagrad", config),
  scaffold: scaffoldRunner,
  diloco: (model, config) => {
    const inner = clientOptimizerFor(config);
    return momentumRunner(dilocoProgram(model, { momentum: config.outerMomentum ?? 0.9, ...(inner === undefined ? {} : { innerOptimizer: inner }) }));
  },
  fedavgm: (model, config) => momentumRunner(fedAvgMProgram(model, { momentum: config.serverMomentum ?? 0.9, ...clientTraining(config) })),
  mime: (model, config) => mimeRunner(model, "mime", config),
  mimelite: (model, config) => mimeRunner(model, "mimelite", config),
  qffl: (model) => plainRunner(qfflProgram(model) as never, (cfg) => ({ q: cfg.q ?? 1 })),
  afl: aflRunner,
};

/**
 * The runner of the configured algorithm; `data` gives secure aggregation its clients' sizes,
 * `secret` a DP or secure run its keys (a fresh one from the OS when not given).
 */
export function runnerFor(config: RunConfig, model: AnyModel, data?: { readonly clientIndices: readonly ArrayLike<number>[] }, secret: RunSecret = RunSecret.generate()): RoundRunner {
  if (config.aggregator === "dp") return dpRunner(model, config, secret);
  if (config.aggregator === "secure") return secureRunner(model, config, Math.max(0, ...(data?.clientIndices ?? []).map((c) => c.length)), secret);
  if (isRobustRun(config)) return robustRunner(model, config);
  const make = runners[config.algorithm];
  if (make === undefined) throw ftError("FT305", { option: "algorithm", why: `no algorithm '${config.algorithm}' in this build` });
  return make(model, config);
}
