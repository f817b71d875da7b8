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

/** Initial parameter values: one flat Float32Array per leaf, with its shape. */
export interface HostParam {
  readonly shape: number[];
  readonly data: Float32Array;
}
/**
 * A model's parameters as host data: one HostParam per parameter name of P.
 *
 * @example
 * const init: HostParams<LogisticParams> = logistic.init(new Rng(0));
 */
export type HostParams<P> = { [K in keyof P]: HostParam };

/** A per-client member value of the given shape. */
export type Member<S extends readonly (number | string)[]> = Tensor<[...S], "float32", "member">;

/** The dtype of a model's features: float32 values, or int32 token ids. */
export type InputDType = "float32" | "int32";

/** A model's parameter specs: named local specs. */
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

/** A model as written: its logits on one client's members (the placement inside map()'s function). */
export interface ModelDefinition<
  Specs extends ParamSpecs,
  Input extends readonly number[],
  Classes extends number,
  X extends InputDType = "float32",
> extends ModelParts<Specs, Input, Classes, X> {
  /** Logits [B, classes] for a batch [B, ...inputShape] of one client's members. */
  logits(params: Place<ValueOf<Specs>, "member">, x: Tensor<["B", ...Input], X, "member">): Tensor<["B", Classes], "float32", "member">;
}

/** The model's parameters as traced values at any placement. */
export type ParamsLike<Specs extends ParamSpecs> = Place<ValueOf<Specs>, Placement>;

/** A model's logits for parameters Params and a batch Features: at their joined placement. */
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

/** A model defined on members, usable at every placement (see the file's comment). */
export function defineModel<Specs extends ParamSpecs, Input extends readonly number[], Classes extends number, X extends InputDType = "float32">(
  definition: ModelDefinition<Specs, Input, Classes, X>,
): Model<Specs, Input, Classes, X> {
  return definition as never;
}

/** Glorot-uniform weights (as Keras initialises dense and conv kernels). */
export function glorotUniform(rng: Rng, shape: number[], fanIn: number, fanOut: number): HostParam {
  const limit = Math.sqrt(6 / (fanIn + fanOut));
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = (rng.float() * 2 - 1) * limit;
  return { shape, data };
}

/** A dense layer's [fanIn, fanOut] kernel, Glorot-uniform. */
export function denseKernel(rng: Rng, fanIn: number, fanOut: number): HostParam {
  return glorotUniform(rng, [fanIn, fanOut], fanIn, fanOut);
}

/** A convolution's [kh, kw, in, out] kernel, Glorot-uniform with Keras's fans (receptive field times channels). */
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
