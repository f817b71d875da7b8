/**
 * FedSGD (McMahan et al. 2017, the baseline of FedAvg): each client computes one gradient of
 * its mean loss over all its data at the server model; the server takes one SGD step along the
 * example-weighted mean of those gradients, which is the gradient of the mean loss over all the
 * cohort's examples: one full-batch gradient step.
 */
import { aggregate } from "../aggregators/aggregate.js";
import { aggregatedRoundProgram, aggregatorIn, reportedLoss, type AggregatorOptions } from "./aggregation.js";
import { maskedLossSum } from "./local.js";
import { ops, type Value } from "./loose.js";
import { zerosLikeTree } from "./trees.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AggregatedRoundProgram, AnyModel, Hyper, RoundData, RoundOutputs } from "./types.js";

/**
 * FedSGD's round as a typed function on traced values; `lr` is the server's step size.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedSgd, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = fedSgd(logistic); // one gradient step on the cohort's weighted mean gradient
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, lr, ...data }) => step(params, data, { lr }));
 */
export function fedSgd<M extends AnyModel, A extends Aggregator = Aggregator<false>>(model: M, options: { readonly aggregator?: A } = {}): AggregatedRoundFunction<A, { lr: Hyper }, RoundOutputs<M>, RoundData, "fedSgd"> {
  return ((params: Value, data: RoundData, hypers: { lr: Hyper }) => fedSgdRound(model, params, data, hypers.lr, options, hypers)) as never;
}

/**
 * A client's gradient and loss, both averaged over its real examples. The batches are summed
 * one at a time (a scan), so memory stays that of one batch however much data the client has.
 */
export function clientGradient(model: AnyModel, w: Value, x: Value, y: Value, mask: Value): { grad: Value; loss: Value } {
  const [sums] = ops.scan({ grad: zerosLikeTree(w), loss: ops.zeros([]) }, { x, y, mask }, (acc: Value, b: Value) => {
    const [loss, g] = ops.valueAndGrad((q: Value) => maskedLossSum(model, q, b.x, b.y, b.mask))(w);
    return [{ grad: ops.add(acc.grad, g), loss: ops.add(acc.loss, loss) }, undefined];
  });
  const examples = ops.maximum(ops.sum(mask), 1);
  return { grad: ops.div(sums.grad, examples), loss: ops.div(sums.loss, examples) };
}

/** One FedSGD round on traced values: params - lr * (weighted mean of client gradients). */
export function fedSgdRound(model: AnyModel, params: Value, data: RoundData, lr: Value, options: AggregatorOptions = {}, inputs: Value = {}): Record<string, Value> {
  const local = ops.map((w: Value, x: Value, y: Value, mask: Value) => clientGradient(model, w, x, y, mask), ops.broadcast(params), data.x, data.y, data.mask);
  const { value, state } = aggregate(aggregatorIn(options), { updates: local.grad, data }, inputs);
  return { params: ops.sub(params, ops.mul(value, lr)), ...reportedLoss(options, local.loss, data), ...state };
}

/**
 * FedSGD's round as a program: (server params, cohort batches, server lr) -> (params, loss).
 *
 * @example
 * import { fedSgdProgram, logistic } from "fedtensor/lib";
 * const round = fedSgdProgram(logistic);
 * console.log(round.signature); // the inputs and outputs of fedAvgProgram(logistic)
 */
export function fedSgdProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(model: M, options: { readonly aggregator?: A } = {}): AggregatedRoundProgram<M, A> {
  return aggregatedRoundProgram(model, "fedsgd", {}, (all: Value, data) => fedSgdRound(model, all.params, data, all.lr, options, all), options) as never;
}
