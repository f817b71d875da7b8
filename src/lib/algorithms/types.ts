/**
 * The static types of the algorithm library's entry points. Algorithms are written once for
 * every model (src/lib/algorithms/loose.ts explains how); these types give their programs and
 * round functions precise signatures, so a user's misuse (client data where the server state
 * goes, say) fails in tsc with the FT code the same mistake would raise inside.
 */
import type { IfValid, Validate } from "../../../types/errors.js";
import type { BroadcastCheck, MapArgCheck } from "../../../types/placement.js";
import type { Place, Tensor, TensorSpec, TreeLike, ValueOf } from "../../../types/tensor.js";
import type { Program } from "../../front/program.js";
import type { Model } from "../models/model.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyModel = Model<any, readonly number[], number>;

/** A model's parameters as traced values at a placement. */
export type ParamsAt<M extends AnyModel, P extends "server" | "clients" | "clients-equal" | "local" | "member"> = Place<ValueOf<M["params"]>, P>;
export type ServerScalar = Tensor<[], "float32", "server">;

/** The specs of a cohort's training data: S padded batches of B examples per client. */
export interface ClientBatchSpecs<Input extends readonly number[]> {
  readonly x: TensorSpec<["S", "B", ...Input], "float32", "clients">;
  readonly y: TensorSpec<["S", "B"], "int32", "clients">;
  /** 1 for a real example, 0 for padding. */
  readonly mask: TensorSpec<["S", "B"], "float32", "clients">;
  /** Each client's example count: FedAvg's weight. */
  readonly count: TensorSpec<[], "float32", "clients">;
}
export type ClientBatches<Input extends readonly number[]> = ValueOf<ClientBatchSpecs<Input>>;

/** A local scalar hyperparameter: a number baked into the program, or a program input. */
export type Hyper = number | Tensor<[], "float32", "local">;

/** The inputs every round program takes: server parameters, the cohort's batches, a client learning rate. */
export type RoundInputs<M extends AnyModel> = {
  readonly params: Place<M["params"], "server">;
  readonly lr: TensorSpec<[], "float32", "local">;
} & ClientBatchSpecs<M["inputShape"]>;

export type RoundProgram<M extends AnyModel, ExtraInputs = unknown, ExtraOutputs = unknown> = Program<
  RoundInputs<M> & ExtraInputs,
  { params: ParamsAt<M, "server">; loss: ServerScalar } & ExtraOutputs
>;

/**
 * A typed round function: server state and client data checked as broadcast() and map() check
 * them; the result placed at the server.
 */
export type RoundFunction<Hypers, Result> = <P extends TreeLike, D extends TreeLike>(
  params: Validate<P, BroadcastCheck<P>>,
  data: Validate<D, MapArgCheck<D>>,
  hypers: Hypers,
) => IfValid<BroadcastCheck<P> | MapArgCheck<D>, Result>;
