/**
 * The static types of the algorithm library's entry points. Algorithms are written once for
 * every model (src/lib/algorithms/loose.ts explains how); these types give their programs and
 * round functions precise signatures, so a user's misuse (client data where the server state
 * goes, say) fails in tsc with the FT code the same mistake would raise inside.
 */
import type { Message, Presumed, Validate } from "../../../types/errors.js";
import type { BroadcastCheck, IsUnknown, MapArgCheck, PrivacyMessage, UnknownMessage } from "../../../types/placement.js";
import type { Place, Placement, PlacementsOf, PrivatePlacement, ReleasedServer, Tensor, TensorSpec, TreeLike, ValueOf } from "../../../types/tensor.js";
import type { Program } from "../../front/program.js";
import type { InputDType, Model, ParamSpecs, ParamsLike } from "../models/model.js";
import type { JoinedOf } from "./placements.js";

export type { ComputedFrom, JoinCheck, Joined, JoinedOf } from "./placements.js";

/**
 * Every model: the bound of the library's functions generic over models.
 *
 * @example
 * import { logistic, lstmModel, Rng, type AnyModel } from "fedtensor/lib";
 * const parameterCount = (model: AnyModel) => Object.values(model.init(Rng.fromSeed(0))).reduce((n, param) => n + param.data.length, 0);
 * console.log(parameterCount(logistic), parameterCount(lstmModel())); // 7850 83296
 */
export type AnyModel = Model<ParamSpecs, readonly number[], number, InputDType>;

/**
 * The dtype of a model's features (float32 unless the model says int32).
 *
 * @example
 * import { characterModel, logistic, type InputDTypeOf } from "fedtensor/lib";
 * const ids: InputDTypeOf<ReturnType<typeof characterModel>> = "int32";
 * const pixels: InputDTypeOf<typeof logistic> = "float32";
 */
export type InputDTypeOf<M extends AnyModel> = M extends Model<infer _S, infer _I, infer _C, infer X> ? X : "float32";

/**
 * A model's parameters as traced values at any placement (a function's result is at their joined placement).
 *
 * @example
 * import { logistic, maskedLoss, type Batch, type ModelParams } from "fedtensor/lib";
 * const loss = <P extends ModelParams<typeof logistic>>(params: P, batch: Batch<typeof logistic>) => maskedLoss(logistic, params as never, batch.x, batch.y, batch.mask);
 */
export type ModelParams<M extends AnyModel> = ParamsLike<M["params"]>;

/** One batch of a model's examples [B, ...], at any placement. */
export interface Batch<M extends AnyModel> {
  readonly x: Tensor<["B", ...M["inputShape"]], InputDTypeOf<M>>;
  readonly y: Tensor<["B"], "int32">;
  /** 1 for a real example, 0 for padding. */
  readonly mask: Tensor<["B"], "float32">;
}

/**
 * S padded batches of a model's examples [S, B, ...] (one client's, or an evaluation set), at any placement.
 *
 * @example
 * import { localTrain, logistic, sgd, type Batches, type ParamsAt } from "fedtensor/lib";
 * const trainOn = (p: ParamsAt<typeof logistic, "member">, batches: Batches<typeof logistic>) => localTrain(logistic, p, batches, (lr) => sgd(lr), 0.1).params;
 */
export interface Batches<M extends AnyModel> {
  readonly x: Tensor<["S", "B", ...M["inputShape"]], InputDTypeOf<M>>;
  readonly y: Tensor<["S", "B"], "int32">;
  readonly mask: Tensor<["S", "B"], "float32">;
}

/**
 * A float32 scalar computed from the values From: at their joined placement.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type ScalarFrom } from "fedtensor/lib";
 * type Loss = ScalarFrom<[Tensor<[3], "float32", "server">, Tensor<[], "float32", "local">]>; // f32[] at the SERVER
 */
export type ScalarFrom<From> = Tensor<[], "float32", JoinedOf<From>>;

/**
 * A model's parameters as traced values at a placement.
 *
 * @example
 * import { atServer, program } from "fedtensor";
 * import { logistic, type ParamsAt } from "fedtensor/lib";
 * const kernelOf = (params: ParamsAt<typeof logistic, "server">) => params.w;
 * const kernel = program({ params: atServer(logistic.params) }, ({ params }) => kernelOf(params));
 */
export type ParamsAt<M extends AnyModel, P extends "server" | "clients" | "clients-equal" | "local" | "member"> = Place<ValueOf<M["params"]>, P>;
/**
 * A model's parameter specs at a placement: an input with the parameters' structure.
 *
 * @example
 * import { logistic, serverParamSpecs, type ParamSpecsAt } from "fedtensor/lib";
 * const params: ParamSpecsAt<typeof logistic, "server"> = serverParamSpecs(logistic); // { w: f32[784, 10]@SERVER, b: f32[10]@SERVER }
 */
export type ParamSpecsAt<M extends AnyModel, P extends "server" | "clients" | "local"> = Place<M["params"], P>;
/**
 * A float32 scalar at the SERVER: a learning rate or a loss.
 *
 * @example
 * const step = (lr: ServerScalar, w: Tensor<[10], "float32", "server">) => mul(w, lr);
 */
export type ServerScalar = Tensor<[], "float32", "server">;
/**
 * A program input holding one local float32 number (a learning rate, FedProx's mu).
 *
 * @example
 * import { f32 } from "fedtensor";
 * import { type ScalarSpec } from "fedtensor/lib";
 * const lr: ScalarSpec = f32([]); // a program input of one number
 */
export type ScalarSpec = TensorSpec<[], "float32", "local">;

/**
 * The specs of a cohort's training data: S padded batches of B examples per client.
 *
 * @example
 * import { clientBatchSpecs, logistic, type ClientBatchSpecs } from "fedtensor/lib";
 * const specs: ClientBatchSpecs<[784]> = clientBatchSpecs(logistic); // x f32[S, B, 784], y, mask, count at the CLIENTS
 */
export interface ClientBatchSpecs<Input extends readonly number[], X extends InputDType = "float32"> {
  readonly x: TensorSpec<["S", "B", ...Input], X, "clients">;
  readonly y: TensorSpec<["S", "B"], "int32", "clients">;
  /** 1 for a real example, 0 for padding. */
  readonly mask: TensorSpec<["S", "B"], "float32", "clients">;
  /** Each client's example count: FedAvg's weight. */
  readonly count: TensorSpec<[], "float32", "clients">;
}
/**
 * A cohort's round data as traced values: per client S batches of B examples (x, int32 labels y,
 * padding mask) and its example count, all at the CLIENTS.
 *
 * @example
 * type MnistBatches = ClientBatches<[784]>; // { x: {f32[S,B,784]}@CLIENTS, y, mask, count }
 */
export type ClientBatches<Input extends readonly number[], X extends InputDType = "float32"> = ValueOf<ClientBatchSpecs<Input, X>>;

/**
 * The specs of an evaluation set: S padded batches of B examples, all local (no placement).
 *
 * @example
 * import { f32, i32 } from "fedtensor";
 * import { type EvaluationBatchSpecs } from "fedtensor/lib";
 * const testSpecs: EvaluationBatchSpecs<[784]> = { x: f32(["S", "B", 784]), y: i32(["S", "B"]), mask: f32(["S", "B"]) };
 */
export interface EvaluationBatchSpecs<Input extends readonly number[], X extends InputDType = "float32"> {
  readonly x: TensorSpec<["S", "B", ...Input], X, "local">;
  readonly y: TensorSpec<["S", "B"], "int32", "local">;
  readonly mask: TensorSpec<["S", "B"], "float32", "local">;
}

/**
 * A local scalar hyperparameter: a number baked into the program, or a program input.
 *
 * @example
 * import { type Hyper } from "fedtensor/lib";
 * const mu: Hyper = 0.01; // a number baked into the program, or a local f32[] input
 */
export type Hyper = number | Tensor<[], "float32", "local">;

/**
 * The inputs every round program takes: server parameters, the cohort's batches, a learning rate.
 *
 * @example
 * import { f32 } from "fedtensor";
 * import { clientBatchSpecs, logistic, serverParamSpecs, type RoundInputs } from "fedtensor/lib";
 * const inputs: RoundInputs<typeof logistic> = { params: serverParamSpecs(logistic), lr: f32([]), ...clientBatchSpecs(logistic) };
 */
export type RoundInputs<M extends AnyModel> = {
  readonly params: Place<M["params"], "server">;
  readonly lr: ScalarSpec;
} & ClientBatchSpecs<M["inputShape"], InputDTypeOf<M>>;

/** RoundInputs with the cohort's batches declared private (docs/language.md "Privacy"). */
export type PrivateRoundInputs<M extends AnyModel> = {
  readonly params: Place<M["params"], "server">;
  readonly lr: ScalarSpec;
} & Place<ClientBatchSpecs<M["inputShape"], InputDTypeOf<M>>, "clients-private">;

/**
 * What every round returns: the new server parameters and the cohort's mean training loss.
 *
 * @example
 * import { logistic, type RoundOutputs } from "fedtensor/lib";
 * const outputs: (keyof RoundOutputs<typeof logistic>)[] = ["params", "loss"]; // what fedAvgProgram(logistic).run resolves to
 */
export type RoundOutputs<M extends AnyModel> = { params: ParamsAt<M, "server">; loss: ServerScalar };

/**
 * A round as a program: the server params, the cohort's batches and the hyper-parameters in, the
 * new params and the mean training loss out (plus an algorithm's ExtraInputs and ExtraOutputs).
 *
 * @example
 * const round: RoundProgram<typeof logistic> = fedAvgProgram(logistic);
 * console.log(round.signature);
 */
export type RoundProgram<M extends AnyModel, ExtraInputs = unknown, ExtraOutputs = unknown> = Program<
  RoundInputs<M> & ExtraInputs,
  RoundOutputs<M> & ExtraOutputs
>;

/**
 * The client data a round maps over: the cohort's batches as clientBatchSpecs declares them.
 *
 * @example
 * import { clientBatchSpecs, logistic, type RoundData } from "fedtensor/lib";
 * const data: RoundData = clientBatchSpecs(logistic); // x, y, mask, count: what a round maps over
 */
export interface RoundData {
  readonly x: TreeLike;
  readonly y: TreeLike;
  readonly mask: TreeLike;
  readonly count: TreeLike;
}

/**
 * A typed round function: server state and client data checked as broadcast() and map() check
 * them; the result placed at the server. Its plain means take what the clients compute to the
 * SERVER, so private client data is FT109 naming the round (`Name`), as tracing the round
 * would find it in the mean (docs/language.md "Privacy").
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, fedAvg, logistic, serverParamSpecs } from "fedtensor/lib";
 * const round = fedAvg(logistic); // a RoundFunction: tsc refuses private client data (FT109)
 * const twoRounds = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]) }, ({ params, lr, ...data }) => round(round(params, data, { lr }).params, data, { lr }));
 */
export type RoundFunction<Hypers, Result, Data extends TreeLike = RoundData, Name extends string = "round"> = <P extends TreeLike, D extends Data>(
  params: Validate<P, BroadcastCheck<P>>,
  data: Validate<D, MapArgCheck<D> | ReleaseCheck<`${Name}()`, D>>,
  hypers: Hypers,
) => Presumed<Result>;

/**
 * FT109 naming `What` and the private leaves of T, never when T has none; FT115 when its placements are not known statically (fail closed).
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type ReleaseCheck } from "fedtensor/lib";
 * type Public = ReleaseCheck<"round()", { x: Tensor<[3], "float32", "clients"> }>; // never: nothing to refuse
 * type Refused = ReleaseCheck<"round()", { x: Tensor<[3], "float32", "clients-private"> }>; // the FT109 message naming round()
 */
export type ReleaseCheck<What extends string, T> = IsUnknown<PlacementsOf<T>> extends true
  ? UnknownMessage<What, T>
  : "clients-private" extends PlacementsOf<T>
    ? PrivacyMessage<What, T>
    : never;

/**
 * A round function whose client data reaches the SERVER only through a releasing mechanism
 * (dpSum, secureSum): the data may be private, and the result is then the mechanism's release
 * (ReleasedServer: no derivative reaches back through it, src/front/grad.ts).
 *
 * @example
 * import { aggregationStages as s, aggregator, fedAvg, fedAvgProgram, logistic } from "fedtensor/lib";
 * const dp = aggregator(s.clip(1), s.dp());
 * const dpRound = fedAvg(logistic, { aggregator: dp }); // takes private client data; its result has no loss
 * console.log(fedAvgProgram(logistic, { aggregator: dp }).signature); // the chain's inputs, which its hypers take too: clip, noiseMultiplier, expectedClients, key, round
 */
export type ReleasingRoundFunction<Hypers, Result, Data extends TreeLike = RoundData> = <P extends TreeLike, D extends Data>(
  params: Validate<P, BroadcastCheck<P>>,
  data: Validate<D, MapArgCheck<D>>,
  hypers: Hypers,
) => Presumed<[Extract<PlacementsOf<D>, PrivatePlacement>] extends [never] ? Result : Place<Result, ReleasedServer>>;

/**
 * The round function of an algorithm given the aggregator A: with a releasing one (one
 * whose `releases` is statically true: a chain of literal stages with dp or secure), a
 * ReleasingRoundFunction, which takes private data, whose hypers carry the aggregator's inputs
 * (key, round, clip, ...) and whose result has no loss; a RoundFunction (FT109 on private
 * data) otherwise.
 */
export type AggregatedRoundFunction<A, Hypers, Result, Data extends TreeLike = RoundData, Name extends string = "round"> = A extends { readonly releases: true; readonly inputTypes?: infer Given }
  ? ReleasingRoundFunction<Hypers & (unknown extends Given ? { readonly [input: string]: unknown } : HypersOf<Exclude<Given, undefined>>), Flat<Omit<Result, "loss"> & ClipOutput<Exclude<Given, undefined>>>, Data>
  : RoundFunction<Hypers, Result, Data, Name>;

/**
 * The round program of an algorithm given the aggregator A: with a chain of literal stages,
 * its inputs (private client data when it releases) and outputs (no loss when it releases, its
 * next clip with dp); RoundProgram otherwise.
 */
export type AggregatedRoundProgram<M extends AnyModel, A, ExtraInputs = unknown, ExtraOutputs = unknown> = A extends { readonly releases: infer R; readonly inputTypes?: infer Given }
  ? AggregatedProgram<M, R, Exclude<Given, undefined>, ExtraInputs, ExtraOutputs>
  : RoundProgram<M, ExtraInputs, ExtraOutputs>;
type AggregatedProgram<M extends AnyModel, R, I, ExtraInputs, ExtraOutputs> = unknown extends I
    ? RoundProgram<M, ExtraInputs, ExtraOutputs>
    : Program<
        (true extends R ? PrivateRoundInputs<M> : RoundInputs<M>) & ExtraInputs & I,
        Flat<{ params: ParamsAt<M, "server"> } & (true extends R ? unknown : { loss: ServerScalar }) & ExtraOutputs & ClipOutput<I>>
      >;
/** An intersection of outputs as one object type (what a program's outputs print as). */
type Flat<T> = { [K in keyof T]: T[K] };
/** The dp stage's next clip, among a round's outputs when its inputs I hold the clip. */
type ClipOutput<I> = I extends { readonly clip: unknown } ? { clip: ServerScalar } : unknown;

/**
 * A SERVER (or local) float32 scalar: a DP round's clip, for one.
 *
 * @example
 * import { type ServerOrLocalScalar } from "fedtensor/lib";
 * const clip: ServerOrLocalScalar = 1.0; // or a local or SERVER f32[] input, such as an adaptive clip
 */
export type ServerOrLocalScalar = Tensor<[], "float32", "server" | "local"> | number;

/**
 * A round function's hyperparameters for an aggregator's program inputs I: a scalar may be a
 * number or a local tensor (a DP round's clip), and `round` may be left out when `key` is the
 * round's already (folded with it). The round number may also be a SERVER input: it is public
 * (the key is the secret), and foldIn(key, round) of two SERVER values is a SERVER key, which
 * tracing accepts too (docs/algorithms.md "DP-FedAvg").
 */
export type HypersOf<I> = Omit<{ readonly [K in keyof I]: HyperOf<I[K]> }, "round"> & ("round" extends keyof I ? { readonly round?: Round } : unknown);
/**
 * The round number: a number, or an i32[] local or at the SERVER. Its placement is asked first
 * with FT104 among the placements allowed, so that tsc's elaboration of a CLIENTS round names
 * the rule tracing reports (foldIn of the SERVER key with a CLIENTS value).
 */
type Round =
  | number
  | ({ readonly placement: "server" | "local" | Message<"FT104", { op: "foldIn"; a: "the key i32[2]@SERVER"; b: "a round that is not local or at the SERVER" }> } & Tensor<
      [],
      "int32",
      "server" | "local"
    >);
type HyperOf<S> = S extends TensorSpec<infer Shape, infer D, infer P> ? (Shape extends [] ? Tensor<[], D, P | "local"> | number : Tensor<Shape, D, P>) : never;

