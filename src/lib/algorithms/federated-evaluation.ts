/**
 * Federated evaluation (as FedJAX's and TFF's): the server model evaluated by each client on its
 * own held-out data, inside map(), so the result is a distribution across clients rather than
 * one number; and personalization evaluation (Wang et al. 2019, "Federated Evaluation of
 * On-device Personalization"): each client fine-tunes the server model on its own training
 * data and is evaluated on its held-out data before and after.
 *
 * Per-client metrics leave the clients as they do in FedJAX's per-client evaluation (the
 * distribution is the point); the confusion matrix only as a sum over the clients.
 */
import { program, type Program } from "../../front/program.js";
import { atClients, f32, i32 } from "../../front/specs.js";
import type { Tensor, TensorSpec } from "../../../types/tensor.js";
import { CheckedProgram, checkDataInputs } from "./checked-inputs.js";
import { classificationSums, ratiosOf, topKOf, type ClassificationOptions } from "./classification.js";
import { clientBatchSpecs, featureSpec, localTrain, plainSgd, serverParamSpecs, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, InputDTypeOf, ParamSpecsAt, ScalarSpec } from "./types.js";

type PerClient = Tensor<[], "float32", "clients">;

/**
 * One client's metrics on its held-out data, one member per client.
 *
 * @example
 * import { type ClientMetrics } from "fedtensor/lib";
 * const names: (keyof ClientMetrics)[] = ["accuracy", "topKAccuracy", "loss", "examples"]; // each a per-client value at the SERVER
 */
export interface ClientMetrics {
  readonly accuracy: PerClient;
  readonly topKAccuracy: PerClient;
  readonly loss: PerClient;
  /** The client's number of held-out examples: 0 for a client with none (its ratios are then 0). */
  readonly examples: PerClient;
}

/**
 * The specs of the clients' held-out batches: T padded batches of B examples per client (T
 * independent of training's S; B shared with it, as models may name their batch dim B).
 *
 * @example
 * import { atClients, f32, i32 } from "fedtensor";
 * import { type HeldOutSpecs } from "fedtensor/lib";
 * const heldOut: HeldOutSpecs<[784], "float32"> = { x: atClients(f32(["T", "B", 784])), y: atClients(i32(["T", "B"])), mask: atClients(f32(["T", "B"])) };
 */
export interface HeldOutSpecs<Input extends readonly number[], X extends "float32" | "int32"> {
  readonly x: TensorSpec<["T", "B", ...Input], X, "clients">;
  readonly y: TensorSpec<["T", "B"], "int32", "clients">;
  readonly mask: TensorSpec<["T", "B"], "float32", "clients">;
}

/**
 * federatedEvaluationProgram's type: the server params and each client's held-out batches in,
 * per-client metrics out.
 *
 * @example
 * const evaluation: FederatedEvaluationProgram<typeof logistic> = federatedEvaluationProgram(logistic);
 */
export type FederatedEvaluationProgram<M extends AnyModel> = Program<
  { readonly params: ParamSpecsAt<M, "server"> } & HeldOutSpecs<M["inputShape"], InputDTypeOf<M>>,
  ClientMetrics & { readonly confusion: Tensor<[M["classes"], M["classes"]], "float32", "server"> }
>;

/**
 * personalizationProgram's type: the server params, each client's training and held-out batches
 * in, per-client metrics before and after fine-tuning out.
 *
 * @example
 * const personalize: PersonalizationProgram<typeof logistic> = personalizationProgram(logistic);
 */
export type PersonalizationProgram<M extends AnyModel> = Program<
  { readonly params: ParamSpecsAt<M, "server">; readonly lr: ScalarSpec } & {
    /** The clients' training data: S padded batches (every local epoch's) of B examples. */
    readonly trainX: TensorSpec<["S", "B", ...M["inputShape"]], InputDTypeOf<M>, "clients">;
    readonly trainY: TensorSpec<["S", "B"], "int32", "clients">;
    readonly trainMask: TensorSpec<["S", "B"], "float32", "clients">;
  } & HeldOutSpecs<M["inputShape"], InputDTypeOf<M>>,
  { readonly before: ClientMetrics; readonly after: ClientMetrics }
>;

function heldOutSpecs(model: AnyModel) {
  return { x: atClients(featureSpec(model, "T")), y: atClients(i32(["T", "B"])), mask: atClients(f32(["T", "B"])) };
}

function clientMetrics(model: AnyModel, params: Value, batches: { x: Value; y: Value; mask: Value }, k: number): { metrics: Value; confusion: Value } {
  const sums = classificationSums(model, params, batches, k);
  return { metrics: { ...ratiosOf(sums), examples: sums.examples }, confusion: sums.confusion };
}

/**
 * (params@SERVER, held-out batches@CLIENTS) -> each client's metrics, and the confusion matrix summed at the SERVER.
 *
 * @example
 * import { federatedEvaluationProgram, logistic } from "fedtensor/lib";
 * const evaluate = federatedEvaluationProgram(logistic); // each client's accuracy, top-5 accuracy, loss and examples at the SERVER
 * console.log(evaluate.signature);
 */
export function federatedEvaluationProgram<M extends AnyModel>(model: M, options: ClassificationOptions = {}): FederatedEvaluationProgram<M> {
  const k = topKOf(model, options);
  const traced = program(
    { params: serverParamSpecs(model), ...heldOutSpecs(model) } as never,
    ({ params, x, y, mask }: Value) => {
      const local = ops.map((w: Value, cx: Value, cy: Value, cm: Value) => clientMetrics(model, w, { x: cx, y: cy, mask: cm }, k), ops.broadcast(params), x, y, mask);
      return { ...local.metrics, confusion: ops.reduceSum(local.confusion) };
    },
    { name: `federated_evaluate_top${k}_${model.name}` },
  );
  return new CheckedProgram(traced, model) as never;
}

/**
 * (params@SERVER, lr, training and held-out batches@CLIENTS) -> each client's held-out metrics
 * before and after it fine-tunes the server model over its training batches with the clients'
 * optimiser (plain SGD unless `clientOptimizer` says), its state fresh, padding taking no step.
 *
 * @example
 * import { logistic, personalizationProgram } from "fedtensor/lib";
 * const personalize = personalizationProgram(logistic); // each client fine-tunes the server model on its training batches, then evaluates on its held-out ones
 * console.log(personalize.signature);
 */
export function personalizationProgram<M extends AnyModel>(model: M, options: ClassificationOptions & ClientTrainingOptions = {}): PersonalizationProgram<M> {
  const k = topKOf(model, options);
  const clientOptimizer = options.clientOptimizer ?? plainSgd;
  const batches = clientBatchSpecs(model);
  const trainSpecs = { trainX: batches.x, trainY: batches.y, trainMask: batches.mask };
  const traced = program(
    { params: serverParamSpecs(model), lr: f32([]), ...trainSpecs, ...heldOutSpecs(model) } as never,
    ({ params, lr, trainX, trainY, trainMask, x, y, mask }: Value) =>
      ops.map(
        (w: Value, tx: Value, ty: Value, tm: Value, hx: Value, hy: Value, hm: Value) => {
          const heldOut = { x: hx, y: hy, mask: hm };
          const tuned = localTrain(model, w, { x: tx, y: ty, mask: tm }, clientOptimizer, lr);
          return { before: clientMetrics(model, w, heldOut, k).metrics, after: clientMetrics(model, tuned.params, heldOut, k).metrics };
        },
        ops.broadcast(params),
        trainX,
        trainY,
        trainMask,
        x,
        y,
        mask,
      ),
    { name: `personalize_top${k}_${model.name}` },
  );
  // CheckedProgram's checks on the held-out inputs (x, y), and the same on the training ones.
  const checkTraining = async (inputs: unknown, name: string) => {
    const { trainX, trainY } = inputs as { trainX?: unknown; trainY?: unknown };
    await checkDataInputs(model, { x: trainX, y: trainY }, name);
  };
  return new CheckedProgram(traced, model, checkTraining) as never;
}
