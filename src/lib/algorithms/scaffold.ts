/**
 * SCAFFOLD (Karimireddy et al. 2020) with option II control variates. The server keeps a
 * control variate c (at the SERVER), every client i its own c_i, which the caller stores per
 * client between rounds (a CLIENTS input and output). Local steps are corrected for client
 * drift:
 *   y <- y - lr (g(y) - c_i + c)                      for each of the client's K real batches
 *   c_i+ = c_i - c + (x - y) / (K lr)                 (option II)
 * and the server moves by the cohort's plain means (the paper's 1/|S| sums):
 *   x <- x + serverLr mean(y - x);   c <- c + participation mean(c_i+ - c_i)
 * where participation = |S| / N, the cohort's share of all clients; given N (`totalClients`),
 * c <- c + sum(c_i+ - c_i) / N, the paper's own form, right whatever number of clients report.
 *
 * A client without a real example (empty, or dropped and left in the tensors with count 0)
 * takes no part: its c_i stays as it was, and the means count only the clients that trained,
 * so a round with dropped clients computes what a round of only its survivors would.
 *
 * The updates and the control changes reach the server through the aggregator, as one tree:
 * the plain mean above by default, or any chain (clip,dp, secure, ...), which then clips,
 * noises or masks both together in one release. The clients' controls are client state
 * (keepOnClients: docs/language.md "Client state"), private under a releasing chain: they
 * never leave their clients. A releasing chain gives no count of the clients that trained, so
 * the server control moves by `participation` times the released mean there.
 */
import { keepOnClients } from "../../front/client-state.js";
import { atClients, f32 } from "../../front/specs.js";
import { aggregate } from "../aggregators/aggregate.js";
import { aggregatedRoundProgram, aggregatorIn, reportedLoss, type AggregatorOptions } from "./aggregation.js";
import { localTrain, plainSgd, realSteps, serverParamSpecs } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { TreeLike } from "../../../types/tensor.js";
import type { AnyModel, Hyper, ParamsAt, ParamSpecsAt, RoundData, RoundFunction, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

/**
 * scaffoldProgram's options: the cohort's share of all clients (or the total number of clients),
 * which scales the server control's update, and the aggregator.
 *
 * @example
 * const round = scaffoldProgram(mlp2nn, { participation: 0.1 } satisfies ScaffoldOptions);
 */
export interface ScaffoldOptions extends AggregatorOptions {
  /** |S| / N: the cohort's share of all clients, which scales the server control's update (default 1). */
  readonly participation?: number;
  /**
   * N, the number of all clients: the server control moves by the sum of the reporting
   * clients' changes over N, so a round where clients dropped out needs no other participation.
   * Takes the place of `participation` when given.
   */
  readonly totalClients?: number;
}

/**
 * SCAFFOLD's per-round values: the clients' and the server's learning rates and the server control
 * variate.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, clientParamSpecs, logistic, scaffold, serverParamSpecs, type ParamsAt, type ScaffoldHypers } from "fedtensor/lib";
 * const inputs = { params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), control: serverParamSpecs(logistic), clientControls: clientParamSpecs(logistic) };
 * const round = program(inputs, ({ params, lr, control, ...data }) => {
 *   const hypers: ScaffoldHypers<ParamsAt<typeof logistic, "server">> = { lr, serverLr: 1, control };
 *   return scaffold(logistic)(params, data, hypers);
 * });
 */
export interface ScaffoldHypers<Control> {
  /** The clients' SGD learning rate. */
  readonly lr: Hyper;
  /** The global (server) learning rate. */
  readonly serverLr: Hyper;
  /** The server control variate c, at the SERVER. */
  readonly control: Control;
}

/**
 * SCAFFOLD's client data: the cohort's batches and each client's control variate c_i.
 *
 * @example
 * import { clientBatchSpecs, clientParamSpecs, logistic, type ScaffoldClientData } from "fedtensor/lib";
 * const data: ScaffoldClientData = { ...clientBatchSpecs(logistic), clientControls: clientParamSpecs(logistic) };
 */
export interface ScaffoldClientData extends RoundData {
  readonly clientControls: TreeLike;
}

/**
 * SCAFFOLD's round outputs: the params and loss, the new server control and each client's new
 * control variate (kept at its client).
 *
 * @example
 * import { logistic, type ScaffoldOutputs } from "fedtensor/lib";
 * const outputs: (keyof ScaffoldOutputs<typeof logistic>)[] = ["params", "loss", "control", "clientControls"]; // what scaffoldProgram(logistic).run resolves to
 */
export type ScaffoldOutputs<M extends AnyModel> = RoundOutputs<M> & { control: ParamsAt<M, "server">; clientControls: ParamsAt<M, "clients"> };
/**
 * SCAFFOLD's round program: FedAvg's inputs plus the server learning rate, the server control and
 * the clients' controls.
 *
 * @example
 * const round: ScaffoldProgram<typeof logistic> = scaffoldProgram(logistic);
 */
export type ScaffoldProgram<M extends AnyModel> = RoundProgram<
  M,
  { readonly serverLr: ScalarSpec; readonly control: ParamSpecsAt<M, "server">; readonly clientControls: ParamSpecsAt<M, "clients"> },
  { control: ParamsAt<M, "server">; clientControls: ParamsAt<M, "clients"> }
>;

/**
 * SCAFFOLD's round as a typed function on traced values: `data` holds the batches and the
 * clients' control variates (both CLIENTS values), `hypers.control` the server's.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, clientParamSpecs, logistic, scaffold, serverParamSpecs } from "fedtensor/lib";
 * const step = scaffold(logistic, { participation: 0.1 });
 * const round = program(
 *   { params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), control: serverParamSpecs(logistic), clientControls: clientParamSpecs(logistic) },
 *   ({ params, lr, control, ...data }) => step(params, data, { lr, serverLr: 1, control }), // { params, loss, control, clientControls }
 * );
 */
export function scaffold<M extends AnyModel>(
  model: M,
  options: ScaffoldOptions = {},
): RoundFunction<ScaffoldHypers<ParamsAt<M, "server">>, ScaffoldOutputs<M>, ScaffoldClientData, "scaffold"> {
  return ((params: Value, data: ScaffoldClientData, hypers: ScaffoldHypers<Value>) => scaffoldRound(model, options, params, data, hypers)) as never;
}

/** One SCAFFOLD round on traced values. */
export function scaffoldRound(
  model: AnyModel,
  options: ScaffoldOptions,
  params: Value,
  data: ScaffoldClientData,
  { lr, serverLr, control }: ScaffoldHypers<Value>,
  inputs: Value = {},
): Record<string, Value> {
  const local = ops.map(
    (global: Value, c: Value, ci: Value, x: Value, y: Value, mask: Value) => {
      // Option II's control update assumes the local steps are plain SGD.
      const trained = localTrain(model, global, { x, y, mask }, plainSgd, lr, { correct: (g: Value) => ops.add(ops.sub(g, ci), c) });
      const steps = realSteps(mask);
      const trains = ops.cast(ops.greater(steps, 0), "float32");
      // max(K, 1) keeps a client without real batches finite; `trains` then leaves its c_i as it was.
      const drift = ops.div(ops.sub(global, trained.params), ops.mul(ops.maximum(steps, 1), lr));
      const controlDelta = ops.mul(ops.sub(drift, c), trains);
      return { delta: ops.sub(trained.params, global), control: ops.add(ci, controlDelta), controlDelta, trains, loss: trained.loss };
    },
    ops.broadcast(params),
    ops.broadcast(control),
    data.clientControls,
    data.x,
    data.y,
    data.mask,
  );
  // The updates and the control changes go through the aggregator as one tree (one release
  // under dp or secure), weighed by whether the client trained: clients that did not have a
  // zero delta and a zero control change, so the plain mean is the paper's mean over those that did.
  const aggregator = aggregatorIn(options);
  const { value, state } = aggregate(aggregator, { updates: { delta: local.delta, control: local.controlDelta }, data, weights: local.trains }, inputs);
  // Given N, sum(c_i+ - c_i) / N: the mean times the clients that trained, a count a releasing chain does not give (it takes `participation`).
  const share = options.totalClients === undefined || aggregator.releases ? (options.participation ?? 1) : ops.div(ops.reduceSum(local.trains), options.totalClients);
  return {
    params: ops.add(params, ops.mul(value.delta, serverLr)),
    ...reportedLoss(options, local.loss, data),
    control: ops.add(control, ops.mul(value.control, share)),
    clientControls: (keepOnClients as (x: Value) => Value)(local.control),
    ...state,
  };
}

/**
 * SCAFFOLD's round as a program: (server params, cohort batches, lr, serverLr, control,
 * clientControls) -> (params, loss, control, clientControls). All control variates start at zero.
 *
 * @example
 * import { filledLike, logistic, Rng, scaffoldProgram } from "fedtensor/lib";
 * const round = scaffoldProgram(logistic, { participation: 10 / 100 });
 * const params = logistic.init(Rng.fromSeed(0));
 * const control = filledLike(params, 0); // the server's control variate starts at zero, as each client's does
 */
export function scaffoldProgram<M extends AnyModel>(model: M, options: ScaffoldOptions = {}): ScaffoldProgram<M> {
  // The controls are trained on the clients' data: private when the chain releases it.
  const clientControls = atClients(model.params as never, aggregatorIn(options).releases ? { private: true } : {});
  const extra = { serverLr: f32([]), control: serverParamSpecs(model), clientControls };
  return aggregatedRoundProgram(model, "scaffold", extra, (all: Value, data) => scaffoldRound(model, options, all.params, { ...data, clientControls: all.clientControls }, all, all), options) as never;
}
