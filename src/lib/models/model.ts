/**
 * Models as parameter trees with typed shapes. A model declares its parameters once as specs
 * (so programs built from it are typed by inference), computes logits from a batch, and makes
 * seeded initial parameters as host data.
 *
 * A model is written once, on one client's members (ModelDefinition: the body is checked by
 * tsc at that placement), and used at every placement (Model): its logits are at the join of
 * its arguments' placements, private where the parameters or the batch are (docs/language.md
 * "Privacy"). That is sound because every operation joins its operands' placements the same
 * way at every placement, and a body that type-checks on members holds no placement primitive
 * (broadcast or a reduction there is FT105); tracing checks every call again.
 */
import type { Presumed, Validate } from "../../../types/errors.js";
import type { DType, Place, Placement, Shape, Tensor, TensorSpec, ValueOf } from "../../../types/tensor.js";
import type { JoinCheck, JoinedOf } from "../algorithms/placements.js";
import type { Rng } from "../random.js";

/**
 * Initial parameter values: one flat Float32Array per leaf, with its shape.
 *
 * @example
 * import { denseKernel, Rng, type HostParam } from "fedtensor/lib";
 * const w: HostParam = denseKernel(Rng.fromSeed(0), 784, 10);
 * console.log(w.shape, w.data.length); // [784, 10] 7840
 */
export interface HostParam {
  readonly shape: number[];
  readonly data: Float32Array;
}
/**
 * A model's parameters as host data: one HostParam per parameter name of P.
 *
 * @example
 * const init: HostParams<LogisticParams> = logistic.init(Rng.fromSeed(0));
 */
export type HostParams<P> = { [K in keyof P]: HostParam };

/**
 * A per-client member value of the given shape.
 *
 * @example
 * import { defineModel, denseKernel, zerosParam, type Member } from "fedtensor/lib";
 * import { add, f32, matmul } from "fedtensor";
 * const linearLogits = (p: { w: Member<[4, 3]>; b: Member<[3]> }, x: Member<["B", 4]>) => add(matmul(x, p.w), p.b);
 * const linear = defineModel({ name: "linear", params: { w: f32([4, 3]), b: f32([3]) }, inputShape: [4] as [4], classes: 3 as const, logits: linearLogits, init: (rng) => ({ w: denseKernel(rng, 4, 3), b: zerosParam([3]) }) });
 */
export type Member<S extends readonly (number | string)[]> = Tensor<[...S], "float32", "member">;

/**
 * The dtype of a model's features: float32 values, or int32 token ids.
 *
 * @example
 * import { lstmModel, mlp2nn, type InputDType } from "fedtensor/lib";
 * const ids: InputDType = lstmModel().inputDType ?? "float32"; // "int32": character ids
 * const pixels: InputDType = mlp2nn.inputDType ?? "float32"; // "float32"
 */
export type InputDType = "float32" | "int32";

/**
 * A model's parameter specs: named local specs.
 *
 * @example
 * import { f32 } from "fedtensor";
 * import { type ParamSpecs } from "fedtensor/lib";
 * const specs = { w: f32([784, 10]), b: f32([10]) } satisfies ParamSpecs;
 */
export type ParamSpecs = { readonly [name: string]: TensorSpec<Shape, DType, "local"> };

/** What every model has besides its logits. */
interface ModelParts<Specs extends ParamSpecs, Input extends readonly number[], Classes extends number, X extends InputDType> {
  readonly name: string;
  /** Parameter specs (local); place them with atServer(model.params). */
  readonly params: Specs;
  /** One example's feature shape. */
  readonly inputShape: Input;
  readonly classes: Classes;
  /** The features' dtype; float32 when absent. */
  readonly inputDType?: X;
  /** Seeded initial parameters. */
  init(rng: Rng): HostParams<Specs>;
}

/**
 * A model as written: its logits on one client's members (the placement inside map()'s function).
 *
 * @example
 * import { add, f32, matmul } from "fedtensor";
 * import { defineModel, denseKernel, zerosParam, type ModelDefinition } from "fedtensor/lib";
 * const specs = { w: f32([4, 3]), b: f32([3]) };
 * const definition: ModelDefinition<typeof specs, [4], 3> = {
 *   name: "linear", params: specs, inputShape: [4], classes: 3,
 *   logits: (p, x) => add(matmul(x, p.w), p.b), // checked on one client's members
 *   init: (rng) => ({ w: denseKernel(rng.fork("w"), 4, 3), b: zerosParam([3]) }),
 * };
 * const linear = defineModel(definition);
 */
export interface ModelDefinition<
  Specs extends ParamSpecs,
  Input extends readonly number[],
  Classes extends number,
  X extends InputDType = "float32",
> extends ModelParts<Specs, Input, Classes, X> {
  /** Logits [B, classes] for a batch [B, ...inputShape] of one client's members. */
  logits(params: Place<ValueOf<Specs>, "member">, x: Tensor<["B", ...Input], X, "member">): Tensor<["B", Classes], "float32", "member">;
}

/**
 * The model's parameters as traced values at any placement.
 *
 * @example
 * import { atServer, program } from "fedtensor";
 * import { logistic, type LogisticParams, type ParamsLike } from "fedtensor/lib";
 * const kernel = program({ params: atServer(logistic.params) }, ({ params }) => {
 *   const p: ParamsLike<LogisticParams> = params; // SERVER parameters are ParamsLike, as members and CLIENTS ones are
 *   return params.w;
 * });
 */
export type ParamsLike<Specs extends ParamSpecs> = Place<ValueOf<Specs>, Placement>;

/**
 * A model's logits for parameters Params and a batch Features: at their joined placement.
 *
 * @example
 * import { atClients, atServer, broadcast, f32, map, program, type Tensor } from "fedtensor";
 * import { logistic, type Logits, type ParamsAt } from "fedtensor/lib";
 * type MemberLogits = Logits<10, ParamsAt<typeof logistic, "member">, Tensor<["B", 784], "float32", "member">>; // f32[B, 10] on each client's members
 * const scores = program({ params: atServer(logistic.params), x: atClients(f32(["B", 784])) }, ({ params, x }) =>
 *   map((p, xs): MemberLogits => logistic.logits(p, xs), broadcast(params), x),
 * );
 */
export type Logits<Classes extends number, Params, Features> = Tensor<["B", Classes], "float32", JoinedOf<[Params, Features]>>;

/** A model as used: its logits at the joined placement of the parameters and the batch. */
export interface Model<Specs extends ParamSpecs, Input extends readonly number[], Classes extends number, X extends InputDType = "float32">
  extends ModelParts<Specs, Input, Classes, X> {
  /**
   * Logits [B, classes] for a batch [B, ...inputShape]: members inside a per-client function
   * (private members give private logits), or at the SERVER, the CLIENTS or unplaced; the
   * parameters and the batch must be where an operation on both can run.
   */
  logits<Params extends ParamsLike<Specs>, Features extends Tensor<["B", ...Input], X>>(
    params: Validate<Params, JoinCheck<"logits", [Params, Features]>>,
    x: Features,
  ): Presumed<Logits<Classes, Params, Features>>;
}

/**
 * A model defined on members, usable at every placement (see the file's comment).
 *
 * @example
 * import { add, f32, matmul, relu } from "fedtensor";
 * import { defineModel, denseKernel, fedAvgProgram, zerosParam } from "fedtensor/lib";
 * const specs = { w1: f32([784, 64]), b1: f32([64]), w2: f32([64, 10]), b2: f32([10]) };
 * const small = defineModel<typeof specs, [784], 10>({
 *   name: "small", params: specs, inputShape: [784], classes: 10,
 *   logits: (p, x) => add(matmul(relu(add(matmul(x, p.w1), p.b1)), p.w2), p.b2),
 *   init: (rng) => ({ w1: denseKernel(rng.fork("w1"), 784, 64), b1: zerosParam([64]), w2: denseKernel(rng.fork("w2"), 64, 10), b2: zerosParam([10]) }),
 * });
 * const round = fedAvgProgram(small);
 */
export function defineModel<Specs extends ParamSpecs, Input extends readonly number[], Classes extends number, X extends InputDType = "float32">(
  definition: ModelDefinition<Specs, Input, Classes, X>,
): Model<Specs, Input, Classes, X> {
  return definition as never;
}

/**
 * Glorot-uniform weights (as Keras initialises dense and conv kernels).
 *
 * @example
 * import { glorotUniform, Rng } from "fedtensor/lib";
 * const embedding = glorotUniform(Rng.fromSeed(0), [96, 8], 96, 8); // uniform in +-sqrt(6 / (96 + 8))
 */
export function glorotUniform(rng: Rng, shape: number[], fanIn: number, fanOut: number): HostParam {
  const limit = Math.sqrt(6 / (fanIn + fanOut));
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = (rng.float() * 2 - 1) * limit;
  return { shape, data };
}

/**
 * A dense layer's [fanIn, fanOut] kernel, Glorot-uniform.
 *
 * @example
 * import { denseKernel, Rng, zerosParam } from "fedtensor/lib";
 * const rng = Rng.fromSeed(0);
 * const layer = { w: denseKernel(rng.fork("w"), 784, 200), b: zerosParam([200]) };
 */
export function denseKernel(rng: Rng, fanIn: number, fanOut: number): HostParam {
  return glorotUniform(rng, [fanIn, fanOut], fanIn, fanOut);
}

/**
 * A convolution's [kh, kw, in, out] kernel, Glorot-uniform with Keras's fans (receptive field times channels).
 *
 * @example
 * import { convKernel, Rng } from "fedtensor/lib";
 * const kernel = convKernel(Rng.fromSeed(0), [5, 5, 1, 32]); // a 5x5 convolution from 1 channel to 32
 * console.log(kernel.shape); // [5, 5, 1, 32]
 */
export function convKernel(rng: Rng, [kh, kw, channelsIn, channelsOut]: [number, number, number, number]): HostParam {
  return glorotUniform(rng, [kh, kw, channelsIn, channelsOut], kh * kw * channelsIn, kh * kw * channelsOut);
}

/**
 * A host parameter of zeros of the given shape (biases' initial value).
 *
 * @example
 * const bias = zerosParam([10]); // { shape: [10], data: Float32Array(10) }
 */
export function zerosParam(shape: number[]): HostParam {
  return { shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) };
}
