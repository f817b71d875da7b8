/**
 * How `fedtensor run` drives each algorithm: its round program with the run's aggregator
 * (--aggregator, src/lib/run/aggregator-chain.ts), the state it keeps at the server besides
 * the model (optimiser moments, a momentum buffer, the aggregator's clip), and the state some
 * algorithms keep per client between that client's rounds (SCAFFOLD's controls, held on the
 * host and handed to the round for its cohort only).
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
import type { HostParam, HostParams } from "../models/model.js";
import { aggregatedRunner, type AlgorithmRound, type DeviceTree, type RoundRunner, type TrainingState } from "./aggregated-runner.js";
import { runStages } from "./aggregator-chain.js";
import type { TensorTree } from "./checkpoint.js";
import { cohortData } from "./cohort.js";
import type { RunConfig } from "./config.js";
import { clientOptimizerFor, clientTraining, mimeBaseOptimizerFor } from "./optimizers.js";
import { RunSecret } from "../privacy/secret.js";
import { distributedDpRunner } from "./distributed-dp-run.js";

export type { DeviceTree, RoundContext, RoundResult, RoundRunner, TrainingState } from "./aggregated-runner.js";
type Params = HostParams<Record<string, unknown>>;

/** The run options every round program gets from the run config: its backend. */
export const runOptionsOf = (config: RunConfig) => ({ backend: config.backend });

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

/**
 * The runner of the configured algorithm with the configured aggregator; `data` gives secure
 * aggregation its clients' sizes, `secret` a private run its keys (a fresh one from the OS
 * when not given).
 */
export function runnerFor(config: RunConfig, model: AnyModel, data?: { readonly clientIndices: readonly ArrayLike<number>[] }, secret: RunSecret = RunSecret.generate()): RoundRunner {
  if (config.aggregator === "distributed-dp") return distributedDpRunner(model, config, secret);
  const largestClient = Math.max(0, ...(data?.clientIndices ?? []).map((c) => c.length));
  const aggregator = aggregatorOf(runStages(config, largestClient), { initialClip: config.dpInitialClip ?? 0.1 });
  if (config.algorithm === "scaffold") return scaffoldRunner(model, config);
  const make = algorithms[config.algorithm];
  if (make === undefined) throw ftError("FT305", { option: "algorithm", why: `no algorithm '${config.algorithm}' in this build` });
  return aggregatedRunner(make(model, config, aggregator), aggregator, config, secret);
}
