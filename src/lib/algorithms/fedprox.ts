/**
 * FedProx (Li et al. 2020): FedAvg whose clients minimise their loss plus a proximal term
 * mu/2 ||w - w_global||^2, which keeps heterogeneous clients near the server model. With
 * mu = 0 it is FedAvg.
 */
import { f32 } from "../../front/specs.js";
import { aggregatedRoundProgram, type AggregatorOptions } from "./aggregation.js";
import { meanClientDelta, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import { squaredNorm } from "./trees.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AggregatedRoundProgram, AnyModel, Hyper, RoundData, RoundOutputs, ScalarSpec } from "./types.js";

/**
 * FedProx's per-round values: the clients' learning rate and the proximal weight mu.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedProx, logistic, serverParamSpecs, type FedProxHypers } from "fedtensor/lib";
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, lr, ...data }) => {
 *   const hypers: FedProxHypers = { lr, mu: 0.01 }; // mu baked into the program
 *   return fedProx(logistic)(params, data, hypers);
 * });
 */
export interface FedProxHypers {
  /** The clients' SGD learning rate. */
  readonly lr: Hyper;
  /** The proximal term's weight. */
  readonly mu: Hyper;
}

/**
 * FedProx's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedProx, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = fedProx(logistic);
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), mu: f32([]) }, ({ params, lr, mu, ...data }) => step(params, data, { lr, mu }));
 */
export function fedProx<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: ClientTrainingOptions & { readonly aggregator?: A } = {},
): AggregatedRoundFunction<A, FedProxHypers, RoundOutputs<M>, RoundData, "fedProx"> {
  return ((params: Value, data: RoundData, hypers: FedProxHypers) => fedProxRound(model, params, data, hypers, options, hypers)) as never;
}

/** One FedProx round on traced values: FedAvg with the proximal term in every local step. */
export function fedProxRound(
  model: AnyModel,
  params: Value,
  data: RoundData,
  { lr, mu }: { lr: Value; mu: Value },
  options: ClientTrainingOptions & AggregatorOptions = {},
  inputs: Value = {},
): Record<string, Value> {
  const proximal = (global: Value) => ({ extra: (w: Value) => ops.mul(squaredNorm(ops.sub(w, global)), ops.mul(mu, 0.5)) });
  const { delta, outputs } = meanClientDelta(model, params, data, lr, { ...options, hooks: proximal }, inputs);
  return { params: ops.add(params, delta), ...outputs };
}

/**
 * FedProx's round as a program: (server params, cohort batches, lr, mu) -> (params, loss).
 *
 * @example
 * import { fedProxProgram, mlp2nn } from "fedtensor/lib";
 * const round = fedProxProgram(mlp2nn); // the inputs of fedAvgProgram(mlp2nn) and mu, the proximal term's weight
 * console.log(round.signature);
 */
export function fedProxProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: ClientTrainingOptions & { readonly aggregator?: A } = {},
): AggregatedRoundProgram<M, A, { readonly mu: ScalarSpec }> {
  return aggregatedRoundProgram(model, "fedprox", { mu: f32([]) }, (all: Value, data) => fedProxRound(model, all.params, data, all, options, all), options) as never;
}
