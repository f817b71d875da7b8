/**
 * FedPer (Arivazhagan et al. 2019, "Federated Learning with Personalization Layers"): the
 * model's base layers are federated, its head (the personal layers, by default the output
 * layer's kernel and bias) stays with each client. Every client of the cohort trains its own
 * head on top of the server's base over its batches; the base deltas go through the
 * aggregator chain (the mean, clip,dp, secure, ...) to the SERVER, and each client keeps its
 * trained head as client state (keepOnClients: docs/language.md "Client state"). With a
 * releasing chain the heads are private: they never leave their clients, and what reaches the
 * SERVER is the chain's release of the base deltas only.
 *
 * The server's copy of the head is the one new clients start from (the runner's initial
 * client state); the rounds never change it.
 */
import { atClients } from "../../front/specs.js";
import { keepOnClients } from "../../front/client-state.js";
import { aggregate } from "../aggregators/aggregate.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import { aggregatedRoundProgram, aggregatorIn, reportedLoss, type AggregatorOptions } from "./aggregation.js";
import { localTrain, plainSgd, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AggregatedRoundProgram, AnyModel, RoundData } from "./types.js";
import { ftError } from "../../errors/error.js";

/**
 * FedPer's options: client training's and the aggregator chain's, and the personal parameters.
 *
 * @example
 * const options: FedPerOptions = { personal: ["w3", "b3"], aggregator: aggregator(s.clip(1), s.dp()) };
 */
export interface FedPerOptions extends ClientTrainingOptions, AggregatorOptions {
  /** The names of the model's personal parameters (its head); by default its last two, the output layer's kernel and bias (a model of two parameters, such as logistic regression, its last: the bias). */
  readonly personal?: readonly string[];
}

/**
 * The model's personal parameter names under the options; FT305 for a name the model does not have, or for all of them (nothing left to federate).
 *
 * @example
 * personalNames(mlp2nn); // ["w3", "b3"]
 */
export function personalNames(model: AnyModel, options: Pick<FedPerOptions, "personal"> = {}): string[] {
  const names = Object.keys(model.params);
  const personal = [...(options.personal ?? names.slice(names.length > 2 ? -2 : -1))];
  const unknown = personal.find((name) => !names.includes(name));
  if (unknown !== undefined) throw ftError("FT305", { option: "personal", why: `model ${model.name} has no parameter ${unknown} (it has ${names.join(", ")})` });
  if (personal.length === 0 || personal.length >= names.length) throw ftError("FT305", { option: "personal", why: `FedPer keeps some of model ${model.name}'s parameters personal and federates the others: name between 1 and ${names.length - 1} of ${names.join(", ")}` });
  return personal;
}

const pick = (tree: Value, names: readonly string[]): Value => Object.fromEntries(names.map((name) => [name, tree[name]]));

/**
 * One FedPer round on traced values: `heads` is the cohort's personal parameters (a CLIENTS
 * tree), `inputs` the aggregator's. Returns the server parameters (the base moved by the
 * aggregated delta, the head as it was), the kept heads, the aggregator's state and, unless
 * the chain releases, the cohort's training loss.
 */
export function fedPerRound(model: AnyModel, params: Value, heads: Value, data: RoundData, lr: Value, options: FedPerOptions = {}, inputs: Value = {}): Record<string, Value> {
  const personal = personalNames(model, options);
  const base = Object.keys(model.params).filter((name) => !personal.includes(name));
  const optimizer = options.clientOptimizer ?? plainSgd;
  const local = ops.map(
    (w: Value, head: Value, x: Value, y: Value, mask: Value) => {
      const trained = localTrain(model, { ...w, ...head }, { x, y, mask }, optimizer, lr);
      return { delta: ops.sub(pick(trained.params, base), w), head: pick(trained.params, personal), loss: trained.loss };
    },
    ops.broadcast(pick(params, base)),
    heads,
    data.x,
    data.y,
    data.mask,
  );
  const aggregator = aggregatorIn(options);
  const { value, state } = aggregate(aggregator, { updates: local.delta, data }, inputs);
  const next = { ...ops.add(pick(params, base), value), ...pick(params, personal) };
  return {
    params: pick(next, Object.keys(model.params)),
    heads: (keepOnClients as (x: Value) => Value)(local.head),
    ...reportedLoss(options, local.loss, data),
    ...state,
  };
}

/**
 * The specs of the cohort's heads: the personal parameters at the clients, private when the chain releases (they are trained on private data).
 *
 * @example
 * const heads = headSpecs(mlp2nn, { aggregator: aggregator(s.clip(1), s.dp()) });
 */
export function headSpecs(model: AnyModel, options: FedPerOptions = {}): Value {
  return atClients(pick(model.params, personalNames(model, options)) as never, aggregatorIn(options).releases ? { private: true } : {});
}

/**
 * FedPer's round as a program: (server params, heads, cohort batches, lr, the aggregator's inputs) -> (params, heads kept on the clients, loss, its state).
 *
 * @example
 * const round = fedPerProgram(mlp2nn, { aggregator: aggregator(s.secure({ bits: 20, clip: 1, maxWeight: 600, maxClients: 100 })) });
 */
export function fedPerProgram<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: FedPerOptions & { readonly aggregator?: A } = {},
): AggregatedRoundProgram<M, A, { readonly heads: object }, { heads: object }> {
  return aggregatedRoundProgram(model, "fedper", { heads: headSpecs(model, options) }, (all: Value, data) => fedPerRound(model, all.params, all.heads, data, all.lr, options, all), options) as never;
}
