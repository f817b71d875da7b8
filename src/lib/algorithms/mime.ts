/**
 * Mime and MimeLite (Karimireddy, Jaggi, Kale, Mohri, Reddi, Stich, Suresh 2020, "Mime:
 * Mimicking Centralized Stochastic Algorithms in Federated Learning", Algorithm 1). A base
 * optimiser B (a gradient transformation of src/lib/optimizers; SGD with momentum 0.9 by
 * default) keeps its state s at the SERVER. Clients step with B's update rule applied with s
 * frozen (their steps never change it), and the server moves s once a round, with the
 * full-batch gradient at the server parameters x:
 *   y_i <- y_i + B.update(g_i, s)                  for each real batch z of client i
 *   g_i = grad f_i(y_i; z) - grad f_i(x; z) + c    Mime: c = mean_i grad f_i(x), an SVRG correction
 *   g_i = grad f_i(y_i; z)                         MimeLite
 *   s <- the state B.update(mean_i grad f_i(x), s) returns
 *   x <- x + serverLr mean_i (y_i - x)
 * Means are example-weighted (the library's convention; the paper's uniform 1/|S| is the case
 * of equal counts), so mean_i grad f_i(x) is the gradient of the cohort's mean loss, FedSGD's.
 * Applying B with frozen state is FedJAX's reading (fedjax.algorithms.mime): the client's step
 * is B's update with the server's state, whose new state is dropped.
 *
 * Mime needs c before the clients train: its round talks to the clients twice (the full
 * gradients, then the training), so it has no MapReduce form and runs its cohort whole.
 * MimeLite computes the full gradient alongside the training: one exchange, streamable.
 */
import { program } from "../../front/program.js";
import { Spec, f32 } from "../../front/specs.js";
import { flatten, unflatten } from "../../front/tree.js";
import { interpret, type OutputLeaf, type OutputTree } from "../../interpret/reference.js";
import type { ProgramIR, TreeDef } from "../../ir/types.js";
import type { HostParam, HostParams } from "../models/model.js";
import { sgd } from "../optimizers/optimizers.js";
import { typed, type GradientTransformation, type LooseTransformation, type StateKind, type OptimizerState } from "../optimizers/transform.js";
import type { SpecOf, Tensor } from "../../../types/tensor.js";
import { clientGradient } from "./fedsgd.js";
import { aggregate } from "../aggregators/aggregate.js";
import { aggregatedRoundProgram, aggregatorIn, reportedLoss, requireAggregator, type AggregatorOptions } from "./aggregation.js";
import { clientDelta, serverParamSpecs, type ClientOptimizer } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AnyModel, Hyper, ParamsAt, RoundData, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

/**
 * Which Mime (Karimireddy et al. 2021): "mime", with the SVRG-style correction, or "mimelite",
 * without.
 *
 * @example
 * const variant: MimeVariant = "mimelite";
 * const round = mimeProgram(logistic, variant);
 */
export type MimeVariant = "mime" | "mimelite";

/**
 * mimeProgram's options: the base optimiser whose statistics the server keeps, and the aggregator.
 *
 * @example
 * const round = mimeProgram(mlp2nn, "mimelite", { baseOptimizer: (lr) => sgd(lr, { momentum: 0.9 }) } satisfies MimeOptions<"trace">);
 */
export interface MimeOptions<K extends StateKind = "trace"> extends AggregatorOptions {
  /**
   * The base optimiser B made from the round's learning rate (default SGD with momentum 0.9,
   * the paper's MimeMom): its state lives at the server, clients apply it frozen.
   */
  readonly baseOptimizer?: (learningRate: Tensor<[], "float32", "local">) => GradientTransformation<K>;
}

/**
 * The base optimiser's state for the model's parameters, at the SERVER.
 *
 * @example
 * import { atServer, f32 } from "fedtensor";
 * import { logistic, serverParamSpecs, type MimeState } from "fedtensor/lib";
 * type State = MimeState<typeof logistic>; // { count: f32[]@SERVER, trace: the parameters at the SERVER }
 * const stateSpecs = { count: atServer(f32([])), trace: serverParamSpecs(logistic) }; // mimeProgram's state input
 */
export type MimeState<M extends AnyModel, K extends StateKind = "trace"> = OptimizerState<K, ParamsAt<M, "server">>;

/**
 * Mime's per-round values: the clients' and the server's learning rates and the base optimiser's
 * server state.
 *
 * @example
 * import { atServer, f32, program } from "fedtensor";
 * import { clientBatchSpecs, logistic, mime, serverParamSpecs, type MimeHypers, type MimeState } from "fedtensor/lib";
 * const state = { count: atServer(f32([])), trace: serverParamSpecs(logistic) };
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), state }, ({ params, lr, state, ...data }) => {
 *   const hypers: MimeHypers<MimeState<typeof logistic>> = { lr, serverLr: 1, state };
 *   return mime(logistic, "mime")(params, data, hypers);
 * });
 */
export interface MimeHypers<State> {
  /** The learning rate of B's steps (the clients' and the state's). */
  readonly lr: Hyper;
  /** The server's step along the mean client delta (1: the paper's x <- mean_i y_i). */
  readonly serverLr: Hyper;
  /** B's state, at the SERVER. */
  readonly state: State;
}

/**
 * Mime's round program: FedAvg's inputs plus the server learning rate and the base optimiser's
 * state.
 *
 * @example
 * const round: MimeProgram<typeof mlp2nn> = mimeProgram(mlp2nn, "mime");
 */
export type MimeProgram<M extends AnyModel, K extends StateKind = "trace"> = RoundProgram<
  M,
  { readonly serverLr: ScalarSpec; readonly state: SpecOf<MimeState<M, K>> },
  { state: MimeState<M, K> }
>;

/**
 * The paper's MimeMom: SGD with momentum 0.9 (the library's, PyTorch's form without dampening).
 *
 * @example
 * import { logistic, mimeMomentum, mimeProgram } from "fedtensor/lib";
 * const round = mimeProgram(logistic, "mime", { baseOptimizer: mimeMomentum }); // Mime's default base optimiser, said explicitly
 */
export const mimeMomentum = (learningRate: Tensor<[], "float32", "local">) => sgd(learningRate, { momentum: 0.9 });

/** Mime's options whatever the base optimiser's kind: what the round's body needs. */
interface AnyMimeOptions extends AggregatorOptions {
  readonly baseOptimizer?: ClientOptimizer;
}

const baseOf = (options: AnyMimeOptions) => (options.baseOptimizer ?? mimeMomentum) as unknown as (lr: Value) => LooseTransformation;

/** B with its state frozen at `state`: each update is B's from that state, and carries no state of its own. */
function frozen(base: (lr: Value) => LooseTransformation, state: Value) {
  return (lr: Value) =>
    typed<"empty">({
      init: () => ({}),
      update: (g, none, params) => [base(lr).update(g, state, params)[0], none],
    });
}

/**
 * Mime's or MimeLite's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { atServer, f32, program } from "fedtensor";
 * import { clientBatchSpecs, logistic, mime, serverParamSpecs } from "fedtensor/lib";
 * const step = mime(logistic, "mimelite"); // SGD with momentum 0.9, its state kept at the server
 * const state = { count: atServer(f32([])), trace: serverParamSpecs(logistic) };
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), state }, ({ params, lr, state, ...data }) =>
 *   step(params, data, { lr, serverLr: 1, state }), // { params, loss, state }
 * );
 */
export function mime<M extends AnyModel, K extends StateKind = "trace", A extends Aggregator = Aggregator<false>>(
  model: M,
  variant: MimeVariant,
  options: MimeOptions<K> & { readonly aggregator?: A } = {},
): AggregatedRoundFunction<A, MimeHypers<MimeState<M, K>>, RoundOutputs<M> & { state: MimeState<M, K> }, RoundData, "mime"> {
  return ((params: Value, data: RoundData, hypers: MimeHypers<Value>) => mimeRound(model, variant, options, params, data, hypers, hypers)) as never;
}

/** One Mime or MimeLite round on traced values. */
export function mimeRound(
  model: AnyModel,
  variant: MimeVariant,
  options: AnyMimeOptions,
  params: Value,
  data: RoundData,
  { lr, serverLr, state }: MimeHypers<Value>,
  inputs: Value = {},
): Record<string, Value> {
  requireAggregator(variant, options);
  const agg = aggregatorIn(options);
  const base = baseOf(options);
  let fullGradient: Value;
  let local: Value;
  let meanDelta: Value;
  let aggregatorState: Record<string, Value>;
  if (variant === "mime") {
    const atServer = ops.map((w: Value, x: Value, y: Value, mask: Value) => clientGradient(model, w, x, y, mask).grad, ops.broadcast(params), data.x, data.y, data.mask);
    fullGradient = aggregate(agg, { updates: atServer, data }, inputs, 0, 2).value;
    local = ops.map(
      (w: Value, c: Value, s: Value, x: Value, y: Value, mask: Value) => {
        // The step's gradient at y minus the same batch's at x, plus the cohort's full gradient at x.
        const correct = (g: Value, batchLoss: (p: Value) => Value) => ops.add(ops.sub(g, ops.grad(batchLoss)(w)), c);
        return clientDelta(model, w, { x, y, mask }, lr, { clientOptimizer: frozen(base, s) as never }, { correct });
      },
      ops.broadcast(params),
      ops.broadcast(fullGradient),
      ops.broadcast(state),
      data.x,
      data.y,
      data.mask,
    );
    ({ value: meanDelta, state: aggregatorState } = aggregate(agg, { updates: local.delta, data }, inputs, 1, 2));
  } else {
    local = ops.map(
      (w: Value, s: Value, x: Value, y: Value, mask: Value) => {
        const trained = clientDelta(model, w, { x, y, mask }, lr, { clientOptimizer: frozen(base, s) as never });
        return { ...trained, grad: clientGradient(model, w, x, y, mask).grad };
      },
      ops.broadcast(params),
      ops.broadcast(state),
      data.x,
      data.y,
      data.mask,
    );
    // One exchange: the delta and the gradient go through the aggregator as one tree (under dp, one Gaussian mechanism).
    const joint = aggregate(agg, { updates: { delta: local.delta, grad: local.grad }, data }, inputs);
    ({ delta: meanDelta, grad: fullGradient } = joint.value);
    aggregatorState = joint.state;
  }
  const [, nextState] = base(lr).update(fullGradient, state, params);
  return {
    params: ops.add(params, ops.mul(meanDelta, serverLr)),
    ...reportedLoss(options, local.loss, data),
    state: nextState,
    ...aggregatorState,
  };
}

/** B's initial state for the model's parameters, traced once: (params@SERVER) -> state@SERVER. */
function initProgram(model: AnyModel, options: AnyMimeOptions) {
  return program({ params: serverParamSpecs(model) } as never, ({ params }: Value) => ({ state: baseOf(options)(0).init(params) }));
}

/** The specs of a traced program's output subtree: its leaves' types. */
function outputSpecs(ir: ProgramIR, tree: TreeDef): unknown {
  const { leaves, def } = flatten(tree, (x: unknown): x is number => typeof x === "number", "outputs");
  return unflatten(def, leaves.map((i) => {
    const type = ir.values[ir.graph.outputs[i]!]!;
    return new Spec(type.shape, type.dtype, type.placement);
  }));
}

/**
 * Mime's or MimeLite's round as a program: (server params, cohort batches, lr, serverLr,
 * state) -> (params, loss, state); initialMimeState makes the first state.
 *
 * @example
 * import { initialMimeState, logistic, mimeProgram, Rng } from "fedtensor/lib";
 * const round = mimeProgram(logistic, "mime");
 * const params = logistic.init(Rng.fromSeed(0));
 * const state = initialMimeState(logistic, params); // { count: 0, trace: zeros like params }, the first round's state
 */
export function mimeProgram<M extends AnyModel, K extends StateKind = "trace">(model: M, variant: MimeVariant, options: MimeOptions<K> = {}): MimeProgram<M, K> {
  const init = initProgram(model, options).ir;
  const stateSpecs = outputSpecs(init, (init.outputTree as { state: TreeDef }).state);
  return aggregatedRoundProgram(model, variant, { serverLr: f32([]), state: stateSpecs as never }, (all: Value, data) => mimeRound(model, variant, options, all.params, data, all, all), options) as never;
}

/** A tree of float32 host tensors, as the parameters' (HostParams) and the checkpoints' are. */
export type HostTree = HostParam | readonly HostTree[] | { readonly [key: string]: HostTree };

/**
 * B's initial state (zero moments, count 0) for host parameters, as float32 host tensors: the first round's `state`.
 *
 * @example
 * import { adam, initialMimeState, logistic, mimeProgram, Rng } from "fedtensor/lib";
 * const options = { baseOptimizer: (lr: Parameters<typeof adam>[0]) => adam(lr) };
 * const round = mimeProgram(logistic, "mimelite", options);
 * const state = initialMimeState(logistic, logistic.init(Rng.fromSeed(0)), options); // Adam's { count, mu, nu }
 */
export function initialMimeState<P, K extends StateKind = "trace">(model: AnyModel, params: HostParams<P>, options: MimeOptions<K> = {}): HostTree {
  const { state } = interpret(initProgram(model, options).ir, { params: params as never }) as { state: OutputTree };
  const isLeaf = (x: unknown): x is OutputLeaf => typeof x === "object" && x !== null && "data" in x;
  const { leaves, def } = flatten(state, isLeaf, "state");
  return unflatten(def, leaves.map((leaf) => ({ shape: [...leaf.shape], data: Float32Array.from(leaf.data) }))) as HostTree;
}
