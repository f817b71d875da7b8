/**
 * Ditto (Li et al. 2021, "Ditto: Fair and Robust Federated Learning Through
 * Personalization"): the server trains a global model as FedAvg does, through the aggregator
 * chain, and every client also keeps a personal model v_k of its own, trained each round from
 * where it left it on its loss plus lambda/2 ||v_k - w||^2, which pulls it toward the round's
 * global model w. The personal models are client state (keepOnClients: docs/language.md
 * "Client state"): with a releasing chain they are private and never leave their clients;
 * only the chain's release of the global deltas reaches the SERVER.
 */
import { atClients, f32 } from "../../front/specs.js";
import { keepOnClients } from "../../front/client-state.js";
import { aggregate } from "../aggregators/aggregate.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import { aggregatedRoundProgram, aggregatorIn, reportedLoss, type AggregatorOptions } from "./aggregation.js";
import { localTrain, plainSgd, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import { squaredNorm } from "./trees.js";
import type { AggregatedRoundProgram, AnyModel, RoundData, ScalarSpec } from "./types.js";

/**
 * Ditto's options: client training's and the aggregator chain's.
 *
 * @example
 * const options: DittoOptions = { aggregator: aggregator(s.secure({ bits: 20, clip: 1, maxWeight: 600, maxClients: 100 })) };
 */
export type DittoOptions = ClientTrainingOptions & AggregatorOptions;

/**
 * One Ditto round on traced values: `personal` is the cohort's personal models (a CLIENTS
 * tree), `lambda` the pull toward the global model, `inputs` the aggregator's. Returns the
 * global parameters, the kept personal models, the aggregator's state and, unless the chain
 * releases, the cohort's training loss (of the global model's local training).
 *
 * @example
 * const out = dittoRound(model, params, personal, data, lr, lambda, { aggregator: aggregator(s.secure({ bits: 20, clip: 1, maxWeight: 600, maxClients: 100 })) });
 */
export function dittoRound(model: AnyModel, params: Value, personal: Value, data: RoundData, lr: Value, lambda: Value, options: DittoOptions = {}, inputs: Value = {}): Record<string, Value> {
  const optimizer = options.clientOptimizer ?? plainSgd;
  const local = ops.map(
    (w: Value, v: Value, x: Value, y: Value, mask: Value) => {
      const global = localTrain(model, w, { x, y, mask }, optimizer, lr);
      const pull = { extra: (p: Value) => ops.mul(squaredNorm(ops.sub(p, w)), ops.mul(lambda, 0.5)) };
      const own = localTrain(model, v, { x, y, mask }, optimizer, lr, pull);
      return { delta: ops.sub(global.params, w), personal: own.params, loss: global.loss };
    },
    ops.broadcast(params),
    personal,
    data.x,
    data.y,
    data.mask,
  );
  const { value, state } = aggregate(aggregatorIn(options), { updates: local.delta, data }, inputs);
  return { params: ops.add(params, value), personal: (keepOnClients as (x: Value) => Value)(local.personal), ...reportedLoss(options, local.loss, data), ...state };
}

/**
 * Ditto's round as a program: (server params, personal models, cohort batches, lr, lambda, the aggregator's inputs) -> (params, personal models kept on the clients, loss, its state).
 *
 * @example
 * const round = dittoProgram(mlp2nn, { aggregator: aggregator(s.clip(1), s.dp()) });
 */
export function dittoProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: DittoOptions & { readonly aggregator?: A } = {},
): AggregatedRoundProgram<M, A, { readonly personal: object; readonly lambda: ScalarSpec }, { personal: object }> {
  const personal = atClients(model.params as never, aggregatorIn(options).releases ? { private: true } : {});
  return aggregatedRoundProgram(
    model,
    "ditto",
    { personal, lambda: f32([]) },
    (all: Value, data) => dittoRound(model, all.params, all.personal, data, all.lr, all.lambda, options, all),
    options,
  ) as never;
}
