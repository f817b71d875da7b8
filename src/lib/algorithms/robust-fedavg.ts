/**
 * FedAvg with a robust aggregator, simulated attackers and quantized updates (issue 12
 * section 2; `fedtensor run --aggregator median | trimmed-mean | krum | norm-clip`,
 * `--byzantine F --attack ...`, `--quantize-bits b`). Each client trains from the server
 * model; its update delta = trained - params then goes through, in this order:
 *
 *   1. the attack, when the client is one of the round's malicious ones (a CLIENTS input of
 *      1s and 0s chosen by the run's seeded RNG): sign-flip sends -s delta, scale s delta,
 *      noise N(0, s^2) in every coordinate instead of its update (Blanchard et al.'s Gaussian
 *      Byzantine clients), s = --attack-scale;
 *   2. stochastic quantization to b bits per coordinate (src/front/quantize.ts), with a key
 *      per client and round;
 *   3. norm bounding (norm-clip: Sun et al. 2019) to --norm-bound;
 *
 * and the server adds the aggregate of the updates to its model: the example-weighted mean
 * (fedavg, norm-clip), the coordinate-wise median or trimmed mean (Yin et al. 2018), or
 * multi-Krum (Blanchard et al. 2017). The robust ones weigh clients equally, as the papers do.
 * All of it is in the program, so it runs alike on every backend. Every client's update
 * reaches the server in the clear: none of this is private.
 */
import { f32, i32, atClients, atServer } from "../../front/specs.js";
import * as random from "../../front/random.js";
import * as robust from "../../front/robust.js";
import { stochasticQuantize } from "../../front/quantize.js";
import { isTracer } from "../../front/trace.js";
import { flatten, unflatten } from "../../front/tree.js";
import { clientDelta, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, RoundData, RoundProgram, ScalarSpec } from "./types.js";
import type { TensorSpec } from "../../../types/tensor.js";

// Through loose signatures, as loose.ts gives the other operations: checked while tracing.
const draw = random as unknown as Record<"split" | "foldIn" | "normal" | "clientIndex", (...args: Value[]) => Value>;
const aggregators = robust as unknown as Record<"reduceMedian" | "reduceTrimmedMean" | "krum" | "clipByNorm", (...args: Value[]) => Value>;

export const robustAggregators = ["median", "trimmed-mean", "krum", "norm-clip"] as const;
export type RobustAggregator = "fedavg" | (typeof robustAggregators)[number];
export const attacks = ["sign-flip", "scale", "noise"] as const;
export type Attack = (typeof attacks)[number];

export interface RobustFedAvgOptions extends ClientTrainingOptions {
  readonly aggregator: RobustAggregator;
  /** trimmed-mean: the fraction dropped from each end of every coordinate. */
  readonly trim?: number;
  /** krum: f, the Byzantine clients tolerated, and m, the clients averaged. */
  readonly krumByzantine?: number;
  readonly krumSelect?: number;
  /** norm-clip: the L2 bound of each client's whole update. */
  readonly normBound?: number;
  /** The attack of the malicious clients; none when absent (the malicious input is then ignored). */
  readonly attack?: Attack;
  /** Quantize each update to this many bits per coordinate. */
  readonly quantizeBits?: number;
}

export type RobustFedAvgProgram<M extends AnyModel> = RoundProgram<
  M,
  {
    readonly malicious: TensorSpec<[], "float32", "clients">;
    readonly attackScale: ScalarSpec;
    readonly key: TensorSpec<[2], "int32", "server">;
    readonly round: TensorSpec<[], "int32", "local">;
  }
>;

/** What a malicious client sends instead of its update delta. */
function attacked(attack: Attack, delta: Value, scale: Value, key: Value): Value {
  if (attack === "sign-flip") return ops.mul(delta, ops.neg(scale));
  if (attack === "scale") return ops.mul(delta, scale);
  const { leaves, def } = flatten(delta, isTracer, "update tree");
  const keys: Value[] = leaves.length === 1 ? [key] : draw.split(key, leaves.length);
  return unflatten(def, leaves.map((leaf, i) => ops.mul(draw.normal(keys[i], leaf.shape), scale)));
}

/** The server's aggregate of the clients' (already bounded) updates. */
function aggregate(options: RobustFedAvgOptions, updates: Value, count: Value): Value {
  switch (options.aggregator) {
    case "median":
      return aggregators.reduceMedian(updates);
    case "trimmed-mean":
      return aggregators.reduceTrimmedMean(updates, { trim: options.trim ?? 0.1 });
    case "krum":
      return aggregators.krum(updates, { byzantine: options.krumByzantine ?? 1, select: options.krumSelect ?? 1 });
    default:
      return ops.reduceWeightedMean(updates, count);
  }
}

/** One round on traced values: the new parameters and the cohort's mean training loss. */
export function robustFedAvgRound(model: AnyModel, options: RobustFedAvgOptions, params: Value, data: RoundData, lr: Value, inputs: Value): { params: Value; loss: Value } {
  const [attackKey, quantizeKey] = draw.split(draw.foldIn(inputs.key, inputs.round), 2);
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value, malicious: Value, attackKeys: Value, quantizeKeys: Value) => {
      const trained = clientDelta(model, w, { x, y, mask }, lr, options);
      let delta = trained.delta;
      if (options.attack !== undefined) {
        const sent = attacked(options.attack, delta, inputs.attackScale, draw.foldIn(attackKeys, draw.clientIndex()));
        delta = ops.add(delta, ops.mul(ops.sub(sent, delta), malicious));
      }
      if (options.quantizeBits !== undefined) delta = stochasticQuantize(delta, draw.foldIn(quantizeKeys, draw.clientIndex()), { bits: options.quantizeBits });
      if (options.aggregator === "norm-clip") delta = aggregators.clipByNorm(delta, options.normBound ?? 1);
      return { delta, loss: trained.loss };
    },
    ops.broadcast(params),
    data.x,
    data.y,
    data.mask,
    inputs.malicious,
    ops.broadcast(attackKey),
    ops.broadcast(quantizeKey),
  );
  return { params: ops.add(params, aggregate(options, local.delta, data.count)), loss: ops.reduceWeightedMean(local.loss, data.count) };
}

/**
 * The round as a program: (server params, cohort batches, lr, malicious@CLIENTS, attackScale,
 * key@SERVER, round) -> (params, loss).
 */
export function robustFedAvgProgram<M extends AnyModel>(model: M, options: RobustFedAvgOptions): RobustFedAvgProgram<M> {
  const inputs = { malicious: atClients(f32([])), attackScale: f32([]), key: atServer(i32([2])), round: i32([]) };
  const name = `${options.aggregator.replace("-", "_")}${options.attack === undefined ? "" : `_${options.attack.replace("-", "_")}`}`;
  return roundProgram(model, name, inputs, (all: Value, data) => robustFedAvgRound(model, options, all.params, data, all.lr, all)) as never;
}
