/**
 * Pieces shared by the algorithms: input specs, the masked batch loss, local training with an
 * optimiser over a client's padded batches (a scan, traced once), and the round skeleton of every algorithm
 * that trains locally and averages the clients' model deltas.
 */
import { program, type InputSpecs } from "../../front/program.js";
import { atClients, atServer, f32, i32, type ClientsOptions, type ClientsPlacement } from "../../front/specs.js";
import { sgd } from "../optimizers/optimizers.js";
import { applyUpdates, type GradientTransformation, type LooseTransformation, type StateKind } from "../optimizers/transform.js";
import { aggregate } from "../aggregators/aggregate.js";
import { meanAggregator, type Aggregator } from "../aggregators/aggregator.js";
import { CheckedProgram } from "./checked-inputs.js";
import { ops, type Value } from "./loose.js";
import { whereTree } from "./trees.js";
import type { Validate } from "../../../types/errors.js";
import type { Place, Placement, Tensor, TreeLike } from "../../../types/tensor.js";
import type { AnyModel, Batch, Batches, ClientBatchSpecs, ComputedFrom, Hyper, InputDTypeOf, JoinCheck, ModelParams, ParamSpecsAt, RoundData, ScalarFrom } from "./types.js";

/** The spec of a batch tensor [S, B, ...inputShape] of the model's feature dtype (`steps` names the first dim). */
export function featureSpec<Steps extends string = "S">(model: AnyModel, steps: Steps = "S" as Steps) {
  const shape = [steps, "B", ...model.inputShape] as const;
  return model.inputDType === "int32" ? i32(shape) : f32(shape);
}

/**
 * The specs of a cohort's training data: S padded batches of B examples per client, a mask
 * (1 for real examples) and each client's example count (FedAvg's weight).
 *
 * @example
 * import { program } from "fedtensor";
 * import { clientBatchSpecs, logistic, maskedLoss } from "fedtensor/lib";
 * const batches = clientBatchSpecs(logistic); // x f32[S, B, 784], y i32[S, B], mask f32[S, B], count f32[], at the CLIENTS
 * const privateBatches = clientBatchSpecs(logistic, { private: true }); // the same, private: only dpSum or secureSum may release them
 */
export function clientBatchSpecs<M extends AnyModel, const O extends ClientsOptions = {}>(
  model: M,
  options?: O,
): Place<ClientBatchSpecs<M["inputShape"], InputDTypeOf<M>>, ClientsPlacement<O>> {
  return {
    x: atClients(featureSpec(model), options),
    y: atClients(i32(["S", "B"]), options),
    mask: atClients(f32(["S", "B"]), options),
    count: atClients(f32([]), options),
  } as never;
}

/**
 * The model's parameter specs placed at the server.
 *
 * @example
 * import { atServer } from "fedtensor";
 * import { logistic, serverParamSpecs } from "fedtensor/lib";
 * const params = serverParamSpecs(logistic); // the same as atServer(logistic.params): { w: f32[784, 10]@SERVER, b: f32[10]@SERVER }
 */
export function serverParamSpecs<M extends AnyModel>(model: M): ParamSpecsAt<M, "server"> {
  return atServer(model.params as never) as never;
}

/**
 * The model's parameter specs placed at the clients: one tree per client (SCAFFOLD's controls).
 *
 * @example
 * import { clientParamSpecs, logistic } from "fedtensor/lib";
 * const controls = clientParamSpecs(logistic); // { w: {f32[784, 10]}@CLIENTS, b: {f32[10]}@CLIENTS }: one tree per client, as SCAFFOLD's controls
 */
export function clientParamSpecs<M extends AnyModel>(model: M): ParamSpecsAt<M, "clients"> {
  return atClients(model.params as never) as never;
}

/** Cross-entropy of each example of a batch, from the model's logits. */
export function exampleLosses(model: AnyModel, logits: Value, y: Value): Value {
  return ops.softmaxCrossEntropy(logits, ops.oneHot(y, model.classes));
}

/** The summed cross-entropy of the real (unmasked) examples of a batch. */
export function maskedLossSum(model: AnyModel, params: Value, x: Value, y: Value, mask: Value): Value {
  return ops.sum(ops.mul(exampleLosses(model, model.logits(params, x), y), mask));
}

/**
 * Mean cross-entropy over the real (unmasked) examples of a batch; 0 for an all-padding batch.
 * At the joined placement of the parameters and the batch: private data gives a private loss.
 *
 * @example
 * import { atServer, f32, i32, program } from "fedtensor";
 * import { logistic, maskedLoss } from "fedtensor/lib";
 * const loss = program({ params: atServer(logistic.params), x: atServer(f32(["B", 784])), y: atServer(i32(["B"])), mask: atServer(f32(["B"])) }, ({ params, x, y, mask }) =>
 *   maskedLoss(logistic, params, x, y, mask), // the mean cross-entropy of the examples whose mask is 1
 * );
 */
export function maskedLoss<M extends AnyModel, P extends ModelParams<M>, X extends Batch<M>["x"], Y extends Batch<M>["y"], K extends Batch<M>["mask"]>(
  model: M,
  params: Validate<P, JoinCheck<"maskedLoss", [P, X, Y, K]>>,
  x: X,
  y: Y,
  mask: K,
): ScalarFrom<[P, X, Y, K]>;
export function maskedLoss(model: AnyModel, params: Value, x: Value, y: Value, mask: Value): Value {
  return ops.div(maskedLossSum(model, params, x, y, mask), ops.maximum(ops.sum(mask), 1));
}

/**
 * A client's mean loss over all its real examples at `params` (0 for a client without any):
 * forward passes only, one batch at a time (a scan), so memory stays that of one batch.
 */
export function clientLoss(model: AnyModel, params: Value, x: Value, y: Value, mask: Value): Value {
  const [sum] = ops.scan(ops.zeros([]), { x, y, mask }, (total: Value, b: Value) => [ops.add(total, maskedLossSum(model, params, b.x, b.y, b.mask)), undefined]);
  return ops.div(sum, ops.maximum(ops.sum(mask), 1));
}

/** The number of batches of masks [S, B] that hold a real example: a client's real local steps. */
export function realSteps(masks: Value): Value {
  return ops.sum(ops.cast(ops.greater(ops.sum(masks, 1), 0), "float32"));
}

/**
 * What a client's local training returns: its parameters after the local steps and its mean
 * training loss.
 *
 * @example
 * import { broadcast, map, program, reduceMean } from "fedtensor";
 * import { clientBatchSpecs, localTrain, logistic, serverParamSpecs, sgd } from "fedtensor/lib";
 * const meanLoss = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic) }, ({ params, x, y, mask }) =>
 *   reduceMean(map((w, xs, ys, ms) => localTrain(logistic, w, { x: xs, y: ys, mask: ms }, (lr) => sgd(lr), 0.1).loss, broadcast(params), x, y, mask)),
 * ); // a LocalTraining's loss: each client's mean training loss
 */
export interface LocalTraining<Params, Loss> {
  /** Parameters after the client's local steps. */
  readonly params: Params;
  /** The client's mean training loss over its real examples (without `extra`'s term). */
  readonly loss: Loss;
}

/** A scalar objective at any placement (a hook's term, a batch's loss). */
type Objective = Tensor<[], "float32", Placement>;

/** What a hook returns: a term, or a gradient tree; its placement joins the training's. */
type Hooked = Objective | TreeLike;

/**
 * Local training's hooks for parameters (and gradients) of type P. H is what they return, so
 * that a value a hook captures (private data, say) joins the training's placement.
 *
 * @example
 * import { broadcast, f32, map, mul, program, reduceMean, square, sub, sum } from "fedtensor";
 * import { clientBatchSpecs, localTrain, logistic, serverParamSpecs, sgd, type LocalHooks } from "fedtensor/lib";
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic) }, ({ params, x, y, mask }) =>
 *   reduceMean(map((w, xs, ys, ms) => {
 *     const proximal = { extra: (p: typeof w) => mul(sum(square(sub(p.w, w.w))), 0.005) } satisfies LocalHooks<typeof w>; // FedProx's term on w
 *     return localTrain(logistic, w, { x: xs, y: ys, mask: ms }, (lr) => sgd(lr), 0.1, proximal).params;
 *   }, broadcast(params), x, y, mask)),
 * );
 */
export interface LocalHooks<P, H extends Hooked = Hooked> {
  /** A term added to each step's objective (FedProx's proximal term). */
  readonly extra?: (p: P) => H & Objective;
  /**
   * Adjusts each step's gradient before the optimiser sees it (SCAFFOLD's control variates);
   * `objective` is the step's batch loss as a function of the parameters (Mime's correction
   * takes its gradient at the server parameters).
   */
  readonly correct?: (g: P, objective: (p: P) => Objective) => H;
}

/**
 * The clients' optimiser made from the round's learning rate (a program input): plain SGD
 * unless an algorithm's options say otherwise, e.g. `(lr) => adam(lr)`.
 *
 * @example
 * import { adam, fedAvgProgram, logistic, type ClientOptimizer } from "fedtensor/lib";
 * const clientAdam: ClientOptimizer = (lr) => adam(lr, { b1: 0.9, b2: 0.99 });
 * const round = fedAvgProgram(logistic, { clientOptimizer: clientAdam });
 */
export type ClientOptimizer = (learningRate: Tensor<[], "float32", "local">) => GradientTransformation<StateKind>;

/**
 * The clients' local training options: their optimiser (plain SGD by default).
 *
 * @example
 * const round = fedAvgProgram(mlp2nn, { clientOptimizer: (lr) => adam(lr) } satisfies ClientTrainingOptions);
 */
export interface ClientTrainingOptions {
  /** The clients' optimiser (default plain SGD): its state starts afresh every round. */
  readonly clientOptimizer?: ClientOptimizer;
}

/** Plain SGD: the clients' optimiser unless an algorithm's options give another. */
export const plainSgd: ClientOptimizer = (learningRate) => sgd(learningRate);

/**
 * Local training over a client's batches with the optimiser `clientOptimizer(lr)`, its state
 * fresh each round (as in FedJAX): each step follows grad(loss + extra). A batch with no real
 * example takes no step and leaves the optimiser's state as it was, so padding changes nothing
 * even when a hook's term does not vanish there (a proximal pull, a control-variate
 * correction).
 *
 * What depends only on the masks is computed once for all steps before the loop, and the loss
 * is averaged after it: on tfjs wasm every small kernel in the loop body costs about as much
 * as its arithmetic. So padding is skipped by multiplying the updates by 0 (a scalar per
 * step), with a `where` only on the optimiser's state: plain SGD's is one scalar, and a
 * `where` per parameter costs as much as the step there.
 *
 * The trained parameters and the loss are at the joined placement of the parameters and the
 * batches: training on private batches gives private parameters.
 *
 * @example
 * import { broadcast, f32, map, program, reduceWeightedMean, sub } from "fedtensor";
 * import { clientBatchSpecs, localTrain, logistic, serverParamSpecs, sgd } from "fedtensor/lib";
 * const meanDelta = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, x, y, mask, count, lr }) =>
 *   reduceWeightedMean(map((w, xs, ys, ms) => sub(localTrain(logistic, w, { x: xs, y: ys, mask: ms }, (rate) => sgd(rate), lr).params, w), broadcast(params), x, y, mask), count),
 * ); // FedAvg's update, written out
 */
export function localTrain<M extends AnyModel, P extends ModelParams<M>, B extends Batches<M>, H extends Hooked = never>(
  model: M,
  params: Validate<P, JoinCheck<"localTrain", [P, B]>>,
  batches: B,
  clientOptimizer: ClientOptimizer,
  lr: Hyper,
  hooks?: LocalHooks<ComputedFrom<P, [P, B]>, H>,
): LocalTraining<ComputedFrom<P, [P, B, H]>, ScalarFrom<[P, B, H]>>;
export function localTrain(
  model: AnyModel,
  params: Value,
  batches: { x: Value; y: Value; mask: Value },
  clientOptimizer: ClientOptimizer,
  lr: Value,
  hooks: LocalHooks<Value> = {},
): LocalTraining<Value, Value> {
  const optimizer = (clientOptimizer as unknown as (lr: Value) => LooseTransformation)(lr);
  const counts = ops.sum(batches.mask, 1);
  const real = ops.greater(counts, 0);
  const steps = { ...batches, real, taken: ops.cast(real, "float32"), perExample: ops.div(1, ops.maximum(counts, 1)) };
  const [trained, stepLosses] = ops.scan({ params, state: optimizer.init(params) }, steps, (carry: Value, b: Value) => {
    const p = carry.params;
    const batchLoss = (q: Value) => ops.mul(maskedLossSum(model, q, b.x, b.y, b.mask), b.perExample);
    const objective = (q: Value) => (hooks.extra === undefined ? batchLoss(q) : ops.add(batchLoss(q), hooks.extra(q)));
    const [value, g] = ops.valueAndGrad(objective)(p);
    const loss = hooks.extra === undefined ? value : ops.sub(value, hooks.extra(p));
    const [updates, state] = optimizer.update(hooks.correct === undefined ? g : hooks.correct(g, batchLoss), carry.state, p);
    return [{ params: applyUpdates(p, ops.mul(updates, b.taken)), state: whereTree(b.real, state, carry.state) }, loss];
  });
  const examples = ops.maximum(ops.sum(counts), 1);
  return { params: trained.params, loss: ops.div(ops.sum(ops.mul(stepLosses, counts)), examples) };
}

/**
 * One client's local training from its copy `w` of the server parameters, with the options'
 * optimiser (plain SGD by default): its delta, trained - w, and its training loss.
 */
export function clientDelta(
  model: AnyModel,
  w: Value,
  batches: { x: Value; y: Value; mask: Value },
  lr: Value,
  options: ClientTrainingOptions = {},
  hooks: LocalHooks<Value> = {},
): { delta: Value; loss: Value } {
  const trained = localTrain(model, w, batches, options.clientOptimizer ?? plainSgd, lr, hooks);
  return { delta: ops.sub(trained.params, w), loss: trained.loss };
}

/**
 * The round skeleton of FedAvg and its relatives: every client starts from the server
 * parameters and trains locally (localTrain with the optimiser `clientOptimizer(lr)`); the
 * clients' deltas (trained - params: a step direction, minus Reddi et al.'s pseudo-gradient)
 * go through the aggregator (the example-weighted mean by default) to the SERVER, with the
 * aggregator's next state. `outputs` holds that state and, unless the aggregator releases
 * private data, the cohort's example-weighted mean training loss. `hooks(global)` makes each
 * client's local hooks from its copy of the server parameters (FedProx's anchor); `inputs`
 * are the program's inputs, where the aggregator finds its own.
 */
export function meanClientDelta(
  model: AnyModel,
  params: Value,
  data: RoundData,
  lr: Value,
  { clientOptimizer = plainSgd, hooks = () => ({}), aggregator = meanAggregator }: { clientOptimizer?: ClientOptimizer; hooks?: (global: Value) => LocalHooks<Value>; aggregator?: Aggregator } = {},
  inputs: Value = {},
): { delta: Value; outputs: Record<string, Value> } {
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value) => clientDelta(model, w, { x, y, mask }, lr, { clientOptimizer }, hooks(w)),
    ops.broadcast(params),
    data.x,
    data.y,
    data.mask,
  );
  const { value, state } = aggregate(aggregator, { updates: local.delta, data }, inputs);
  return { delta: value, outputs: { ...(aggregator.releases ? {} : { loss: ops.reduceWeightedMean(local.loss, data.count) }), ...state } };
}

/**
 * A round program: inputs params@SERVER, the cohort's batches, lr, then `extraInputs`; named
 * `<algorithm>_<model>`. `round` gets the traced inputs and the batches as RoundData. Its
 * run() checks the data first (checked-inputs.ts). With `{ private: true }` the batches are
 * private client data (docs/language.md "Privacy"): tracing proves that only DP or secure
 * aggregators take what is computed from them to the SERVER.
 */
export function roundProgram(
  model: AnyModel,
  algorithm: string,
  extraInputs: InputSpecs,
  round: (inputs: Value, data: RoundData) => Value,
  data: ClientsOptions = {},
): unknown {
  const traced = program(
    { params: serverParamSpecs(model), ...clientBatchSpecs(model, data), lr: f32([]), ...extraInputs } as never,
    (inputs: Value) => round(inputs, { x: inputs.x, y: inputs.y, mask: inputs.mask, count: inputs.count }),
    { name: `${algorithm}_${model.name}` },
  );
  return new CheckedProgram(traced, model);
}
