/**
 * Plain tensors in host memory: a shape and a flat row-major typed array. The data layer
 * produces these, and program.run() takes them as they are (the runtime's HostTensor, with a
 * typed array for data), handing them to TensorFlow.js without copying element by element.
 */
import type { HostTensor as RunInput } from "../../runtime/inputs.js";

/**
 * The host arrays data sets and parameters are held in: Float32Array or Int32Array.
 *
 * @example
 * const data: HostData = new Float32Array([1, 2, 3]);
 */
export type HostData = Float32Array | Int32Array;

/**
 * Host data with its shape, as round inputs are given to program.run().
 *
 * @example
 * const x: HostTensor<Float32Array> = { shape: [2, 3], data: new Float32Array(6) };
 */
export interface HostTensor<D extends HostData = HostData> extends RunInput {
  readonly shape: number[];
  readonly data: D;
}

/**
 * The number of elements of a shape (1 for a scalar's empty shape).
 *
 * @example
 * import { elementCount } from "fedtensor/lib";
 * console.log(elementCount([20, 10, 784])); // 156800
 */
export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** A zero-filled array of the same kind as `like`. */
export function allocateLike<D extends HostData>(like: D, length: number): D {
  return (like instanceof Float32Array ? new Float32Array(length) : new Int32Array(length)) as D;
}
