/**
 * FedAvgM (Hsu et al. 2019, "Measuring the Effects of Non-Identical Data Distribution for
 * Federated Visual Classification"): FedAvg whose server applies SGD with momentum to the
 * pseudo-gradient, the server model minus the example-weighted mean of the client models,
 * with the momentum buffer at the SERVER:
 *   g = x - mean(x_i);   buffer = momentum buffer + g;   x = x - serverLr buffer
 * With momentum 0 and serverLr 1 it is FedAvg.
 */
import { f32 } from "../../front/specs.js";
import { aggregatedRoundProgram, type AggregatorOptions } from "./aggregation.js";
import { meanClientDelta, serverParamSpecs, type ClientTrainingOptions } from "./local.js";
import type { Value } from "./loose.js";
import { serverMomentumStep, type ServerMomentumOptions } from "./server-optimizers.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AggregatedRoundProgram, AnyModel, Hyper, ParamsAt, ParamSpecsAt, RoundData, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

/**
 * fedAvgM's options: the server momentum, the clients' optimiser and the aggregator.
 *
 * @example
 * const round = fedAvgMProgram(mlp2nn, { momentum: 0.9, nesterov: true } satisfies FedAvgMOptions);
 */
export interface FedAvgMOptions extends ServerMomentumOptions, ClientTrainingOptions, AggregatorOptions {}

/**
 * FedAvgM's per-round values: the clients' and the server's learning rates and the server momentum
 * buffer.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedAvgM, logistic, serverParamSpecs, type FedAvgMHypers, type ParamsAt } from "fedtensor/lib";
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), buffer: serverParamSpecs(logistic) }, ({ params, lr, buffer, ...data }) => {
 *   const hypers: FedAvgMHypers<ParamsAt<typeof logistic, "server">> = { lr, serverLr: 1, buffer };
 *   return fedAvgM(logistic)(params, data, hypers);
 * });
 */
export interface FedAvgMHypers<Buffer> {
  /** The clients' learning rate. */
  readonly lr: Hyper;
  /** The server learning rate. */
  readonly serverLr: Hyper;
  /** The server momentum buffer, at the SERVER. */
  readonly buffer: Buffer;
}

/**
 * FedAvgM's round program: FedAvg's inputs plus the server learning rate and momentum buffer; the
 * new buffer among its outputs.
 *
 * @example
 * const round: FedAvgMProgram<typeof mlp2nn> = fedAvgMProgram(mlp2nn);
 */
export type FedAvgMProgram<M extends AnyModel> = RoundProgram<
  M,
  { readonly serverLr: ScalarSpec; readonly buffer: ParamSpecsAt<M, "server"> },
  { buffer: ParamsAt<M, "server"> }
>;

/**
 * FedAvgM's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedAvgM, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = fedAvgM(logistic, { momentum: 0.9 });
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), serverLr: f32([]), buffer: serverParamSpecs(logistic) }, ({ params, lr, serverLr, buffer, ...data }) =>
 *   step(params, data, { lr, serverLr, buffer }), // { params, loss, buffer }
 * );
 */
export function fedAvgM<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedAvgMOptions & { readonly aggregator?: A } = {},
): AggregatedRoundFunction<A, FedAvgMHypers<ParamsAt<M, "server">>, RoundOutputs<M> & { buffer: ParamsAt<M, "server"> }, RoundData, "fedAvgM"> {
  return ((params: Value, data: RoundData, hypers: FedAvgMHypers<Value>) => fedAvgMRound(model, options, params, data, hypers, hypers)) as never;
}

/** One FedAvgM round on traced values: local training, then the server momentum step. */
export function fedAvgMRound(
  model: AnyModel,
  options: FedAvgMOptions,
  params: Value,
  data: RoundData,
  { lr, serverLr, buffer }: FedAvgMHypers<Value>,
  inputs: Value = {},
): Record<string, Value> {
  const { delta, outputs } = meanClientDelta(model, params, data, lr, options, inputs);
  const step = serverMomentumStep(params, delta, buffer, serverLr, options);
  return { params: step.params, ...outputs, buffer: step.buffer };
}

/**
 * FedAvgM's round as a program: (server params, cohort batches, lr, serverLr, buffer) ->
 * (params, loss, buffer). The buffer starts at zero. `name` names the program (DiLoCo's is its own).
 *
 * @example
 * import { fedAvgMProgram, filledLike, logistic, Rng } from "fedtensor/lib";
 * const round = fedAvgMProgram(logistic, { momentum: 0.9 });
 * const params = logistic.init(Rng.fromSeed(0));
 * const buffer = filledLike(params, 0); // the first round's momentum buffer
 * console.log(round.signature); // inputs params, x, y, mask, count, lr, serverLr, buffer; outputs params, loss, buffer
 */
export function fedAvgMProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedAvgMOptions & { readonly aggregator?: A } = {},
  name = "fedavgm",
): AggregatedRoundProgram<M, A, { readonly serverLr: ScalarSpec; readonly buffer: ParamSpecsAt<M, "server"> }, { buffer: ParamsAt<M, "server"> }> {
  return aggregatedRoundProgram(model, name, { serverLr: f32([]), buffer: serverParamSpecs(model) }, (all: Value, data) => fedAvgMRound(model, options, all.params, data, all, all), options) as never;
}
