/**
 * FedAvg (McMahan et al. 2017): every client of the cohort starts from the server model,
 * trains locally over its batches (SGD unless the options give another client optimiser),
 * and the server combines the resulting deltas with the options' aggregator: the example-
 * weighted mean by default, or any chain of src/lib/aggregators (DP-FedAvg is FedAvg with
 * clip,dp; secure FedAvg with secure; robust FedAvg with median, krum, ...).
 */
import { aggregatedRoundProgram, type AggregatorOptions } from "./aggregation.js";
import { meanClientDelta, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AggregatedRoundProgram, AnyModel, Hyper, RoundData, RoundOutputs } from "./types.js";

/**
 * fedAvg's options: the clients' optimiser and the server's aggregator.
 *
 * @example
 * const round = fedAvgProgram(logistic, { aggregator: aggregator(aggregationStages.clip(1), aggregationStages.mean()) } satisfies FedAvgOptions);
 */
export interface FedAvgOptions extends ClientTrainingOptions, AggregatorOptions {}

/**
 * FedAvg's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedAvg, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = fedAvg(logistic);
 * const twoRounds = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, lr, ...data }) =>
 *   step(step(params, data, { lr }).params, data, { lr }), // two rounds on the same cohort, in one program
 * );
 */
export function fedAvg<M extends AnyModel, A extends Aggregator = Aggregator<false>>(model: M, options: FedAvgOptions & { readonly aggregator?: A } = {}): AggregatedRoundFunction<A, { lr: Hyper }, RoundOutputs<M>, RoundData, "fedAvg"> {
  return ((params: Value, data: RoundData, hypers: { lr: Hyper }) => fedAvgRound(model, params, data, hypers.lr, options, hypers)) as never;
}

/**
 * One FedAvg round on traced values: the new server parameters, the cohort's training loss
 * (none under a releasing aggregator) and the aggregator's state; `inputs` hold the
 * aggregator's inputs.
 */
export function fedAvgRound(model: AnyModel, params: Value, data: RoundData, lr: Value, options: FedAvgOptions = {}, inputs: Value = {}): Record<string, Value> {
  const { delta, outputs } = meanClientDelta(model, params, data, lr, options, inputs);
  return { params: ops.add(params, delta), ...outputs };
}

/**
 * FedAvg's round as a program: (server params, cohort batches, lr, the aggregator's inputs) -> (params, loss, its state).
 *
 * @example
 * import { fedAvgProgram, logistic, loadMnist, partitionIid, federate, roundCohort, Rng } from "fedtensor/lib";
 * const round = fedAvgProgram(logistic);
 * const train = loadMnist("train");
 * const data = federate(train, loadMnist("test"), partitionIid(train.y.length, 100, Rng.fromSeed(0)));
 * const cohort = roundCohort(data, { rng: Rng.fromSeed(1), round: 0, clientsPerRound: 5, batchSize: 20 });
 * const flat = { ...cohort.x, shape: [...cohort.x.shape.slice(0, 3), 784] }; // [C, S, B, 784]
 * const { params, loss } = await round.run({ params: logistic.init(Rng.fromSeed(2)), x: flat, y: cohort.y, mask: cohort.mask, count: cohort.count, lr: 0.1 });
 * console.log((await loss.data())[0]); // the cohort's mean training loss over its local steps, about 1.5
 */
export function fedAvgProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedAvgOptions & { readonly aggregator?: A } = {},
): AggregatedRoundProgram<M, A> {
  return aggregatedRoundProgram(model, "fedavg", {}, (all: Value, data) => fedAvgRound(model, all.params, data, all.lr, options, all), options) as never;
}
