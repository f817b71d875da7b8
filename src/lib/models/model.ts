/**
 * Models as parameter trees with typed shapes. A model declares its parameters once as specs
 * (so programs built from it are typed by inference), computes logits from a batch inside
 * map()'s function, and makes seeded initial parameters as host data.
 */
import type { Place, Tensor, ValueOf } from "../../../types/tensor.js";
import type { Rng } from "../random.js";

/** Initial parameter values: one flat Float32Array per leaf, with its shape. */
export interface HostParam {
  readonly shape: number[];
  readonly data: Float32Array;
}
export type HostParams<P> = { [K in keyof P]: HostParam };

/** A per-client member value of the given shape. */
export type Member<S extends readonly (number | string)[]> = Tensor<[...S], "float32", "member">;

/** The dtype of a model's features: float32 values, or int32 token ids. */
export type InputDType = "float32" | "int32";

export interface Model<
  Specs extends Record<string, unknown>,
  Input extends readonly number[],
  Classes extends number,
  X extends InputDType = "float32",
> {
  readonly name: string;
  /** Parameter specs (local); place them with atServer(model.params). */
  readonly params: Specs;
  /** One example's feature shape. */
  readonly inputShape: Input;
  readonly classes: Classes;
  /** The features' dtype; float32 when absent. */
  readonly inputDType?: X;
  /** Logits [B, classes] for a batch [B, ...inputShape], inside a per-client function. */
  logits(params: Place<ValueOf<Specs>, "member">, x: Tensor<["B", ...Input], X, "member">): Tensor<["B", Classes], "float32", "member">;
  /** Seeded initial parameters. */
  init(rng: Rng): HostParams<Specs>;
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

export function zerosParam(shape: number[]): HostParam {
  return { shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) };
}
