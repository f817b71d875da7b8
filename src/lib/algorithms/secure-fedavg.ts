/**
 * FedAvg with secure aggregation (Bonawitz et al. 2017; TFF's secure weighted mean: a
 * MeanFactory whose value and weight sums are SecureSumFactory's): each client trains as in
 * FedAvg, clips every coordinate of its update to [-clip, clip] (the declared range; TFF's
 * SecureSumFactory clips to its bounds as well, and here the clip is the stated option, not
 * a silent one), and the server learns only
 *   sum_i n_i clip(delta_i)  and  sum_i n_i
 * through secureSum (src/front/secure.ts), never a client's update or example count; their
 * ratio is the example-weighted mean update. The weights are int32 example counts in
 * [0, maxWeight], summed exactly; the weighted updates are float32 in
 * [-clip maxWeight, clip maxWeight], quantized with the largest scale whose sum over
 * maxClients clients fits 2^bits.
 *
 * The masks of a round derive from the run's key folded with the round number: fresh every
 * round (a key reused across rounds would let the server difference two rounds' masked values).
 * In one process this is a simulation: the server holds the key every pair key derives from,
 * so it could unmask any client; the real protocol needs keys the server never holds.
 *
 * The program declares the clients' batches private, as DP-FedAvg's does: the secure sums are
 * the only way their data reaches the SERVER, so the round reports no training loss (a plain
 * mean of the clients' losses would be a release outside the secure sum, FT109).
 */
import { i32, atServer } from "../../front/specs.js";
import * as secure from "../../front/secure.js";
import * as random from "../../front/random.js";
import { clientDelta, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { TensorSpec } from "../../../types/tensor.js";
import type { AnyModel, ParamsAt, PrivateRoundInputs, RoundData } from "./types.js";
import type { Program } from "../../front/program.js";

// secureSum and foldIn through loose signatures, as loose.ts gives the others: checked while tracing.
const loose = { ...secure, ...random } as unknown as Record<"secureSum" | "foldIn" | "split", (...args: Value[]) => Value>;

export interface SecureAggregationOptions {
  /** The modulus 2^bits of the sums, bits <= 30. */
  readonly bits: number;
  /** Each coordinate of a client's update is clipped to [-clip, clip]. */
  readonly clip: number;
  /** The largest example count of a client: the weights' declared range is [0, maxWeight]. */
  readonly maxWeight: number;
  /** The most clients a round sums: fixes the quantization scale (and checks overflow while tracing). */
  readonly maxClients: number;
  /** Neighbours per client in the mask graph; SecAgg+'s O(log n) in each streamed group when absent. */
  readonly neighbours?: number;
  /** The fewest clients of a secure group (secureSum's minClients; a streamed chunk is one group). */
  readonly minClients?: number;
}

export type SecureFedAvgProgram<M extends AnyModel> = Program<
  PrivateRoundInputs<M> & { readonly key: TensorSpec<[2], "int32", "server">; readonly round: TensorSpec<[], "int32", "local"> },
  { params: ParamsAt<M, "server"> }
>;

/**
 * The quantization scale of the weighted updates: (nearly) the largest whose sum over
 * maxClients clients fits 2^bits; 0.1% headroom absorbs float32 rounding of the scale.
 */
export function secureUpdateScale(o: SecureAggregationOptions): number {
  return Math.fround((0.999 * (2 ** o.bits - 1)) / (o.maxClients * 2 * o.clip * o.maxWeight));
}

/** One secure FedAvg round on traced values: the new parameters. */
export function secureFedAvgRound(model: AnyModel, options: ClientTrainingOptions & SecureAggregationOptions, params: Value, data: RoundData, lr: Value, key: Value): { params: Value } {
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value, count: Value) => {
      const trained = clientDelta(model, w, { x, y, mask }, lr, options);
      const clipped = ops.minimum(ops.maximum(trained.delta, -options.clip), options.clip);
      return { weighted: ops.mul(clipped, count), weight: ops.cast(count, "int32") };
    },
    ops.broadcast(params),
    data.x,
    data.y,
    data.mask,
    data.count,
  );
  const [updateKey, weightKey] = loose.split(key, 2);
  const common = {
    bits: options.bits,
    maxClients: options.maxClients,
    ...(options.neighbours === undefined ? {} : { neighbours: options.neighbours }),
    ...(options.minClients === undefined ? {} : { minClients: options.minClients }),
  };
  const bound = options.clip * options.maxWeight;
  const weightedSum = loose.secureSum(local.weighted, { ...common, key: updateKey, range: [-bound, bound], scale: secureUpdateScale(options) });
  const totalWeight = loose.secureSum(local.weight, { ...common, key: weightKey, range: [0, options.maxWeight] });
  const delta = ops.div(weightedSum, ops.maximum(ops.cast(totalWeight, "float32"), 1));
  return { params: ops.add(params, delta) };
}

/** Secure FedAvg's round as a program: (server params, private cohort batches, lr, key@SERVER, round) -> params. */
export function secureFedAvgProgram<M extends AnyModel>(model: M, options: ClientTrainingOptions & SecureAggregationOptions): SecureFedAvgProgram<M> {
  return roundProgram(
    model,
    "secure_fedavg",
    { key: atServer(i32([2])), round: i32([]) },
    (all: Value, data) => secureFedAvgRound(model, options, all.params, data, all.lr, loose.foldIn(all.key, all.round)),
    { private: true },
  ) as never;
}
