/**
 * FedAvg with distributed DP (`fedtensor run --aggregator distributed-dp`; Kairouz, Liu and
 * Steinke 2021's experiments, TFF's DistributedDpSumFactory inside a mean): each client trains
 * from the server model, and its update reaches the server only through distributedDpSum
 * (src/front/distributed-dp.ts): clipped, rotated, rounded, noised by the client and wrapped
 * mod 2^bits. The server divides the decoded sum by the number of clients that took part (in
 * distributed DP the server sees who did: the count is no secret) and adds it to the model.
 *
 * The rotation key is the run's secret key folded with the round (fresh each round); each
 * client's key for its rounding and noise is a CLIENTS input, derived by the runner from the
 * run's secret per round and client (src/lib/privacy/secret.ts), as a deployed client would draw
 * its own from a CSPRNG. The batches are private: tracing proves that only the distributed sum
 * takes what is computed from them to the SERVER, so the round reports no training loss.
 */
import { distributedDpSum } from "../../front/distributed-dp.js";
import * as random from "../../front/random.js";
import { atClients, atServer, i32 } from "../../front/specs.js";
import type { Program } from "../../front/program.js";
import type { TensorSpec } from "../../../types/tensor.js";
import { clientDelta, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, ParamsAt, PrivateRoundInputs } from "./types.js";

const loose = { ...random, distributedDpSum } as unknown as Record<"foldIn" | "distributedDpSum", (...args: Value[]) => Value>;

export interface DistributedDpOptions {
  /** c: each client's whole update is clipped to this L2 norm. */
  readonly clip: number;
  /** z: with minClients survivors the sum's noise is about N(0, (z c)^2) per coordinate. */
  readonly noiseMultiplier: number;
  /** The modulus 2^bits of the secure sum. */
  readonly bits: number;
  /** The survivors the noise is calibrated for (a round with fewer is not aggregated). */
  readonly minClients: number;
  /** The most clients a round sums. */
  readonly maxClients: number;
}

export type DistributedDpFedAvgProgram<M extends AnyModel> = Program<
  PrivateRoundInputs<M> & {
    readonly key: TensorSpec<[2], "int32", "server">;
    readonly round: TensorSpec<[], "int32", "local">;
    readonly clientKeys: TensorSpec<[2], "int32", "clients-private">;
  },
  { params: ParamsAt<M, "server"> }
>;

/** One round on traced values: the new parameters. */
export function distributedDpFedAvgRound(model: AnyModel, options: ClientTrainingOptions & DistributedDpOptions, all: Value): { params: Value } {
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value) => ({ delta: clientDelta(model, w, { x, y, mask }, all.lr, options).delta, one: ops.full([], 1) }),
    ops.broadcast(all.params),
    all.x,
    all.y,
    all.mask,
  );
  const rotationKey = loose.foldIn(all.key, all.round);
  const sum = loose.distributedDpSum(local.delta, { ...pick(options), rotationKey, clientKeys: all.clientKeys });
  const clients = ops.reduceSum(local.one);
  return { params: ops.add(all.params, ops.div(sum, ops.maximum(clients, 1))) };
}

const pick = (o: DistributedDpOptions): DistributedDpOptions => ({ clip: o.clip, noiseMultiplier: o.noiseMultiplier, bits: o.bits, minClients: o.minClients, maxClients: o.maxClients });

/** The round as a program: (server params, private cohort batches, lr, key@SERVER, round, clientKeys@CLIENTS) -> params. */
export function distributedDpFedAvgProgram<M extends AnyModel>(model: M, options: ClientTrainingOptions & DistributedDpOptions): DistributedDpFedAvgProgram<M> {
  return roundProgram(
    model,
    "distributed_dp_fedavg",
    { key: atServer(i32([2])), round: i32([]), clientKeys: atClients(i32([2]), { private: true }) },
    (all: Value) => distributedDpFedAvgRound(model, options, all),
    { private: true },
  ) as never;
}
