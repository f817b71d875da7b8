/**
 * Federated analytics as programs: statistics of values that stay on the clients, of which
 * the server sees only the aggregate.
 */
import { program, type Program } from "../../front/program.js";
import { atClients, f32, i32 } from "../../front/specs.js";
import type { Dim, Tensor, TensorSpec } from "../../../types/tensor.js";
import { ops, type Value } from "./loose.js";

/**
 * federatedMeanProgram's type: one value per client in, the mean at the SERVER out.
 *
 * @example
 * const mean: FederatedMeanProgram<[3]> = federatedMeanProgram([3]);
 * await mean.run({ value: [[1, 2, 3], [3, 4, 5]] }); // [2, 3, 4]
 */
export type FederatedMeanProgram<S extends readonly Dim[]> = Program<{ readonly value: TensorSpec<[...S], "float32", "clients"> }, Tensor<[...S], "float32", "server">>;

/**
 * The mean over the clients of one value per client, of the given shape: {f32[S]}@CLIENTS -> f32[S]@SERVER.
 *
 * @example
 * import { federatedMeanProgram } from "fedtensor/lib";
 * const mean = federatedMeanProgram([2]);
 * const out = await mean.run({ value: { shape: [3, 2], data: Float32Array.of(1, 2, 3, 4, 5, 6) } });
 * console.log(await out.data()); // Float32Array [3, 4]
 */
export function federatedMeanProgram<const S extends readonly Dim[]>(shape: S): FederatedMeanProgram<S> {
  return program({ value: atClients(f32(shape) as never) }, ({ value }: Value) => ops.reduceMean(value), { name: "federated_mean" }) as never;
}

/**
 * federatedHistogramProgram's type: the clients' int32 values and masks in, the bins' counts at
 * the SERVER out.
 *
 * @example
 * const histogram: FederatedHistogramProgram<10> = federatedHistogramProgram(10);
 */
export type FederatedHistogramProgram<Bins extends number> = Program<
  { readonly values: TensorSpec<["N"], "int32", "clients">; readonly mask: TensorSpec<["N"], "float32", "clients"> },
  Tensor<[Bins], "float32", "server">
>;

/**
 * A histogram of the clients' values in [0, bins): each client counts its values (oneHot,
 * summed over its N values, padding slots masked out) and the server sums the counts. A value
 * outside [0, bins) counts nowhere, as oneHot gives it no 1.
 *
 * @example
 * import { federatedHistogramProgram } from "fedtensor/lib";
 * const histogram = federatedHistogramProgram(3);
 * const counts = await histogram.run({ values: { shape: [2, 2], data: Int32Array.of(0, 2, 2, 1) }, mask: { shape: [2, 2], data: Float32Array.of(1, 1, 1, 0) } });
 * console.log(await counts.data()); // Float32Array [1, 0, 2]: client 1's second value is padding
 */
export function federatedHistogramProgram<const Bins extends number>(bins: Bins): FederatedHistogramProgram<Bins> {
  return program(
    { values: atClients(i32(["N"])), mask: atClients(f32(["N"])) },
    ({ values, mask }: Value) =>
      ops.reduceSum(ops.map((v: Value, m: Value) => ops.sum(ops.mul(ops.oneHot(v, bins), ops.expandDims(m, 1)), 0), values, mask)),
    { name: `federated_histogram_${bins}` },
  ) as never;
}
