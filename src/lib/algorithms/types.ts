/**
 * The static types of the algorithm library's entry points. Algorithms are written once for
 * every model (src/lib/algorithms/loose.ts explains how); these types give their programs and
 * round functions precise signatures, so a user's misuse (client data where the server state
 * goes, say) fails in tsc with the FT code the same mistake would raise inside.
 */
import type { Presumed, Validate } from "../../../types/errors.js";
import type { BroadcastCheck, MapArgCheck } from "../../../types/placement.js";
import type { Place, Tensor, TensorSpec, TreeLike, ValueOf } from "../../../types/tensor.js";
import type { Program } from "../../front/program.js";
import type { InputDType, Model } from "../models/model.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyModel = Model<any, readonly number[], number, any>;

/** The dtype of a model's features (float32 unless the model says int32). */
export type InputDTypeOf<M extends AnyModel> = M extends Model<infer _S, infer _I, infer _C, infer X> ? X : "float32";

/** A model's parameters as traced values at a placement. */
export type ParamsAt<M extends AnyModel, P extends "server" | "clients" | "clients-equal" | "local" | "member"> = Place<ValueOf<M["params"]>, P>;
/** A model's parameter specs at a placement: an input with the parameters' structure. */
export type ParamSpecsAt<M extends AnyModel, P extends "server" | "clients" | "local"> = Place<M["params"], P>;
export type ServerScalar = Tensor<[], "float32", "server">;
/** A program input holding one local float32 number (a learning rate, FedProx's mu). */
export type ScalarSpec = TensorSpec<[], "float32", "local">;

/** The specs of a cohort's training data: S padded batches of B examples per client. */
export interface ClientBatchSpecs<Input extends readonly number[], X extends InputDType = "float32"> {
  readonly x: TensorSpec<["S", "B", ...Input], X, "clients">;
  readonly y: TensorSpec<["S", "B"], "int32", "clients">;
  /** 1 for a real example, 0 for padding. */
  readonly mask: TensorSpec<["S", "B"], "float32", "clients">;
  /** Each client's example count: FedAvg's weight. */
  readonly count: TensorSpec<[], "float32", "clients">;
}
export type ClientBatches<Input extends readonly number[], X extends InputDType = "float32"> = ValueOf<ClientBatchSpecs<Input, X>>;

/** The specs of an evaluation set: S padded batches of B examples, all local (no placement). */
export interface EvaluationBatchSpecs<Input extends readonly number[], X extends InputDType = "float32"> {
  readonly x: TensorSpec<["S", "B", ...Input], X, "local">;
  readonly y: TensorSpec<["S", "B"], "int32", "local">;
  readonly mask: TensorSpec<["S", "B"], "float32", "local">;
}

/** A local scalar hyperparameter: a number baked into the program, or a program input. */
export type Hyper = number | Tensor<[], "float32", "local">;

/** The inputs every round program takes: server parameters, the cohort's batches, a learning rate. */
export type RoundInputs<M extends AnyModel> = {
  readonly params: Place<M["params"], "server">;
  readonly lr: ScalarSpec;
} & ClientBatchSpecs<M["inputShape"], InputDTypeOf<M>>;

/** RoundInputs with the cohort's batches declared private (docs/language.md "Privacy"). */
export type PrivateRoundInputs<M extends AnyModel> = {
  readonly params: Place<M["params"], "server">;
  readonly lr: ScalarSpec;
} & Place<ClientBatchSpecs<M["inputShape"], InputDTypeOf<M>>, "clients-private">;

/** What every round returns: the new server parameters and the cohort's mean training loss. */
export type RoundOutputs<M extends AnyModel> = { params: ParamsAt<M, "server">; loss: ServerScalar };

export type RoundProgram<M extends AnyModel, ExtraInputs = unknown, ExtraOutputs = unknown> = Program<
  RoundInputs<M> & ExtraInputs,
  RoundOutputs<M> & ExtraOutputs
>;

/** The client data a round maps over: the cohort's batches as clientBatchSpecs declares them. */
export interface RoundData {
  readonly x: TreeLike;
  readonly y: TreeLike;
  readonly mask: TreeLike;
  readonly count: TreeLike;
}

/**
 * A typed round function: server state and client data checked as broadcast() and map() check
 * them; the result placed at the server.
 */
export type RoundFunction<Hypers, Result, Data extends TreeLike = RoundData> = <P extends TreeLike, D extends Data>(
  params: Validate<P, BroadcastCheck<P>>,
  data: Validate<D, MapArgCheck<D>>,
  hypers: Hypers,
) => Presumed<Result>;
