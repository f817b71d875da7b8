/**
 * q-FFL by q-FedAvg (Li, Sanjabi, Beirami, Smith 2020, "Fair Resource Allocation in Federated
 * Learning", Algorithm 2): the clients train locally as in FedAvg, and the server weighs each
 * client's update by its loss to the power q, so clients the model serves badly pull harder.
 * With L = 1/lr (the paper's estimate of the Lipschitz constant, as its code does):
 *   F_k = client k's mean loss at the server model w, before training (+ 1e-10, as the paper's code)
 *   dw_k = L (w - w_k)                          w_k: the client's locally trained model
 *   D_k = F_k^q dw_k
 *   h_k = q F_k^(q-1) ||dw_k||^2 + L F_k^q
 *   w <- w - sum_k D_k / sum_k h_k
 * Sums are over the clients that trained (an empty or dropped client adds nothing). With q = 0
 * the step is the plain mean of the clients' deltas: FedAvg with every client weighted alike.
 */
import { f32 } from "../../front/specs.js";
import { aggregate } from "../aggregators/aggregate.js";
import { aggregatedRoundProgram, aggregatorIn, requireAggregator, type AggregatorOptions } from "./aggregation.js";
import { clientLoss, localTrain, plainSgd, realSteps, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import { squaredNorm } from "./trees.js";
import type { AnyModel, Hyper, RoundData, RoundFunction, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

/**
 * q-FFL's per-round values: the clients' learning rate and the fairness exponent q.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, logistic, qffl, serverParamSpecs, type QfflHypers } from "fedtensor/lib";
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, lr, ...data }) => {
 *   const hypers: QfflHypers = { lr, q: 1 }; // q = 1 weighs each client by its loss
 *   return qffl(logistic)(params, data, hypers);
 * });
 */
export interface QfflHypers {
  /** The clients' learning rate; L = 1 / lr. */
  readonly lr: Hyper;
  /** The fairness exponent q >= 0: 0 is FedAvg with uniform weights, larger q favours the worst-served clients. */
  readonly q: Hyper;
}

/**
 * q-FFL's round program: FedAvg's inputs plus q.
 *
 * @example
 * const round: QfflProgram<typeof logistic> = qfflProgram(logistic);
 */
export type QfflProgram<M extends AnyModel> = RoundProgram<M, { readonly q: ScalarSpec }>;

/** The paper's code adds this to every loss before raising it to a power, so a zero loss stays finite at q < 1. */
const LOSS_FLOOR = 1e-10;

/**
 * q-FedAvg's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, logistic, qffl, serverParamSpecs } from "fedtensor/lib";
 * const step = qffl(logistic);
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), q: f32([]) }, ({ params, lr, q, ...data }) => step(params, data, { lr, q }));
 */
export function qffl<M extends AnyModel>(model: M, options: QfflOptions = {}): RoundFunction<QfflHypers, RoundOutputs<M>, RoundData, "qffl"> {
  return ((params: Value, data: RoundData, hypers: QfflHypers) => qfflRound(model, options, params, data, hypers, hypers)) as never;
}

/** One q-FedAvg round on traced values. */
export function qfflRound(model: AnyModel, options: QfflOptions, params: Value, data: RoundData, { lr, q }: QfflHypers, inputs: Value = {}): Record<string, Value> {
  requireAggregator("qffl", options);
  const lipschitz = ops.div(1, lr);
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value) => {
      const before = ops.add(clientLoss(model, w, x, y, mask), LOSS_FLOOR);
      const trained = localTrain(model, w, { x, y, mask }, options.clientOptimizer ?? plainSgd, lr);
      const step = ops.mul(ops.sub(w, trained.params), lipschitz);
      const powered = ops.pow(before, q);
      const h = ops.add(ops.mul(ops.mul(ops.pow(before, ops.sub(q, 1)), q), squaredNorm(step)), ops.mul(powered, lipschitz));
      // A where, not a product: 0 * F^(q-1) is NaN where an empty client's F^(q-1) overflows.
      const trains = ops.greater(realSteps(mask), 0);
      // The server's step sum_k D_k / sum_k h_k is the mean of the clients' steps D_k / h_k weighted by h_k.
      const safeH = ops.where(trains, h, 1);
      return { update: ops.neg(ops.div(ops.mul(step, ops.where(trains, powered, 0)), safeH)), h: ops.where(trains, h, 0), loss: trained.loss };
    },
    ops.broadcast(params),
    data.x,
    data.y,
    data.mask,
  );
  const { value, state } = aggregate(aggregatorIn(options), { updates: local.update, data, weights: local.h }, inputs);
  return { params: ops.add(params, value), loss: ops.reduceWeightedMean(local.loss, data.count), ...state };
}

export interface QfflOptions extends ClientTrainingOptions, AggregatorOptions {}

/**
 * q-FedAvg's round as a program: (server params, cohort batches, lr, q) -> (params, loss).
 *
 * @example
 * import { logistic, qfflProgram } from "fedtensor/lib";
 * const round = qfflProgram(logistic); // the inputs of fedAvgProgram and q: 0 is FedAvg with uniform weights
 * console.log(round.signature);
 */
export function qfflProgram<M extends AnyModel>(model: M, options: QfflOptions = {}): QfflProgram<M> {
  return aggregatedRoundProgram(model, "qffl", { q: f32([]) }, (all: Value, data) => qfflRound(model, options, all.params, data, all, all), options) as never;
}
