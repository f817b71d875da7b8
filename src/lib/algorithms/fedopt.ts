/**
 * FedOpt (Reddi et al. 2021, "Adaptive Federated Optimization"): clients train locally as in
 * FedAvg (with SGD, or the options' client optimiser); the example-weighted mean of their
 * deltas is a pseudo-gradient (negated) for an adaptive server optimiser, FedAdam, FedYogi or
 * FedAdagrad, whose moments live at the SERVER.
 */
import { f32 } from "../../front/specs.js";
import { aggregatedRoundProgram, type AggregatorOptions } from "./aggregation.js";
import { meanClientDelta, serverParamSpecs, type ClientTrainingOptions } from "./local.js";
import type { Value } from "./loose.js";
import { adaptiveStep, type AdaptiveOptimizer, type AdaptiveOptions, type AdaptiveState } from "./server-optimizers.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AggregatedRoundProgram, AnyModel, Hyper, ParamsAt, ParamSpecsAt, RoundData, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

/**
 * fedOpt's options: the server optimiser (adam, yogi or adagrad) with its betas and tau, the
 * clients' optimiser and the aggregator.
 *
 * @example
 * const round = fedOptProgram(mlp2nn, { optimizer: "adam", tau: 1e-3 } satisfies FedOptOptions);
 */
export interface FedOptOptions extends AdaptiveOptions, ClientTrainingOptions, AggregatorOptions {
  /** The server optimiser: "adam" (FedAdam), "yogi" (FedYogi) or "adagrad" (FedAdagrad). */
  readonly optimizer: AdaptiveOptimizer;
}

/**
 * FedOpt's per-round values: the clients' and the server's learning rates and the adaptive
 * optimiser's state.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedOpt, logistic, serverParamSpecs, type FedOptHypers, type FedOptState } from "fedtensor/lib";
 * const state = { m: serverParamSpecs(logistic), v: serverParamSpecs(logistic) };
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), state }, ({ params, lr, state, ...data }) => {
 *   const hypers: FedOptHypers<FedOptState<typeof logistic>> = { lr, serverLr: 0.01, state };
 *   return fedOpt(logistic, { optimizer: "adagrad" })(params, data, hypers);
 * });
 */
export interface FedOptHypers<State> {
  /** The clients' learning rate. */
  readonly lr: Hyper;
  /** The server optimiser's learning rate (eta in the paper). */
  readonly serverLr: Hyper;
  /** The server optimiser's moments, at the SERVER. */
  readonly state: State;
}

/**
 * FedOpt's optimiser state as traced SERVER values: the moments m and v, shaped like the model's
 * parameters.
 *
 * @example
 * import { fedOptProgram, logistic, type FedOptState } from "fedtensor/lib";
 * const round = fedOptProgram(logistic, { optimizer: "adam" });
 * type Outputs = Awaited<ReturnType<typeof round.run>>; // { params, loss, state }
 * type State = FedOptState<typeof logistic>; // { m, v }: the parameters' tree twice, at the SERVER
 */
export type FedOptState<M extends AnyModel> = AdaptiveState<ParamsAt<M, "server">>;
/**
 * The specs of FedOpt's optimiser state: the moments m and v, shaped like the model's parameters,
 * at the SERVER.
 *
 * @example
 * import { logistic, serverParamSpecs, type FedOptStateSpecs } from "fedtensor/lib";
 * const state: FedOptStateSpecs<typeof logistic> = { m: serverParamSpecs(logistic), v: serverParamSpecs(logistic) }; // fedOptProgram's state input
 */
export type FedOptStateSpecs<M extends AnyModel> = AdaptiveState<ParamSpecsAt<M, "server">>;
/**
 * FedOpt's round program: FedAvg's inputs plus the server learning rate and the optimiser state,
 * the new state among its outputs.
 *
 * @example
 * const round: FedOptProgram<typeof mlp2nn> = fedOptProgram(mlp2nn, { optimizer: "yogi" });
 */
export type FedOptProgram<M extends AnyModel> = RoundProgram<M, { readonly serverLr: ScalarSpec; readonly state: FedOptStateSpecs<M> }, { state: FedOptState<M> }>;

/**
 * FedOpt's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedOpt, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = fedOpt(logistic, { optimizer: "yogi" }); // FedYogi
 * const state = { m: serverParamSpecs(logistic), v: serverParamSpecs(logistic) };
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), serverLr: f32([]), state }, ({ params, lr, serverLr, state, ...data }) =>
 *   step(params, data, { lr, serverLr, state }), // { params, loss, state }
 * );
 */
export function fedOpt<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedOptOptions & { readonly aggregator?: A },
): AggregatedRoundFunction<A, FedOptHypers<FedOptState<M>>, RoundOutputs<M> & { state: FedOptState<M> }, RoundData, "fedOpt"> {
  return ((params: Value, data: RoundData, hypers: FedOptHypers<Value>) => fedOptRound(model, options, params, data, hypers, hypers)) as never;
}

/** One FedOpt round on traced values: local SGD, then the adaptive server step. */
export function fedOptRound(
  model: AnyModel,
  options: FedOptOptions,
  params: Value,
  data: RoundData,
  { lr, serverLr, state }: FedOptHypers<Value>,
  inputs: Value = {},
): Record<string, Value> & { state: AdaptiveState<Value> } {
  const { delta, outputs } = meanClientDelta(model, params, data, lr, options, inputs);
  const step = adaptiveStep(options.optimizer, options, params, delta, state, serverLr);
  return { params: step.params, ...outputs, state: step.state };
}

/**
 * FedOpt's round as a program: (server params, cohort batches, lr, serverLr, state) ->
 * (params, loss, state). initialAdaptiveState makes the first round's state.
 *
 * @example
 * import { fedOptProgram, initialAdaptiveState, logistic, Rng } from "fedtensor/lib";
 * const round = fedOptProgram(logistic, { optimizer: "adam", beta2: 0.99, tau: 1e-3 }); // FedAdam
 * const params = logistic.init(Rng.fromSeed(0));
 * const state = initialAdaptiveState(params, 1e-3); // the first round's { m, v }
 */
export function fedOptProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedOptOptions & { readonly aggregator?: A },
): AggregatedRoundProgram<M, A, { readonly serverLr: ScalarSpec; readonly state: FedOptStateSpecs<M> }, { state: FedOptState<M> }> {
  const moments = { m: serverParamSpecs(model), v: serverParamSpecs(model) };
  return aggregatedRoundProgram(model, `fed${options.optimizer}`, { serverLr: f32([]), state: moments }, (all: Value, data) => fedOptRound(model, options, all.params, data, all, all), options) as never;
}
