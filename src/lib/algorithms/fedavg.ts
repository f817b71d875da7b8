/**
 * FedAvg (McMahan et al. 2017): every client of the cohort starts from the server model,
 * trains locally over its batches (SGD unless the options give another client optimiser),
 * and the server averages the resulting models weighted by the clients' example counts.
 */
import { meanClientDelta, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, Hyper, RoundData, RoundFunction, RoundOutputs, RoundProgram } from "./types.js";

/** FedAvg's round as a typed function on traced values, for use inside a user's program. */
export function fedAvg<M extends AnyModel>(model: M, options: ClientTrainingOptions = {}): RoundFunction<{ lr: Hyper }, RoundOutputs<M>, RoundData, "fedAvg"> {
  return ((params: Value, data: RoundData, hypers: { lr: Hyper }) => fedAvgRound(model, params, data, hypers.lr, options)) as never;
}

/** One FedAvg round on traced values: the new server parameters and the cohort's training loss. */
export function fedAvgRound(model: AnyModel, params: Value, data: RoundData, lr: Value, options: ClientTrainingOptions = {}): { params: Value; loss: Value } {
  const { delta, loss } = meanClientDelta(model, params, data, lr, options);
  return { params: ops.add(params, delta), loss };
}

/** FedAvg's round as a program: (server params, cohort batches, lr) -> (params, loss). */
export function fedAvgProgram<M extends AnyModel>(model: M, options: ClientTrainingOptions = {}): RoundProgram<M> {
  return roundProgram(model, "fedavg", {}, ({ params, lr }, data) => fedAvgRound(model, params, data, lr, options)) as never;
}
