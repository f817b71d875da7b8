/**
 * DP-FedAvg (McMahan, Ramage, Talwar, Zhang 2018, "Learning Differentially Private Recurrent
 * Language Models"), with the fixed-size cohort and uniform weights of TFF's
 * DifferentiallyPrivateFactory:
 *   each client trains locally from the server model; its update (the whole tree) is clipped
 *   to global L2 norm C: delta_i * min(1, C / ||delta_i||);
 *   the server adds N(0, (z C)^2) to every coordinate of the sum and divides by the expected
 *   cohort size m (the paper's fixed-denominator estimator with uniform weights: one client
 *   changes the numerator by at most C, whatever the others do).
 * Weighting by example counts would need per-client weights capped and a denominator fixed in
 * advance; with MNIST's equal-sized clients it is the same as uniform, so it is left out.
 *
 * Adaptive clipping (Andrew, Thakkar, McMahan, Ramaswamy 2021, "Differentially Private
 * Learning with Adaptive Clipping"): each client also reports b_i = [||delta_i|| <= C] - 1/2
 * (centred, so its sensitivity is 1/2); the server adds N(0, sigma_b^2) to their sum and
 * estimates the fraction below C, b = sum / m + 1/2; then C <- C exp(-eta (b - gamma)) for a
 * target quantile gamma. The noise multiplier z of the whole round is split as their
 * Theorem 1 says: the update's is z_delta = (z^-2 - (2 sigma_b)^-2)^(-1/2), so the round is
 * exactly as private as a Gaussian mechanism of multiplier z (dpNoiseSplit).
 *
 * The noise is drawn at the SERVER from the round's key, split per parameter leaf; the
 * clients draw nothing. The reported training loss is the cohort's plain weighted mean, a
 * diagnostic outside the privacy guarantee (as TFF's client metrics are).
 */
import { f32, i32, atServer } from "../../front/specs.js";
import type { InputSpecs } from "../../front/program.js";
import * as random from "../../front/random.js";
import { isTracer } from "../../front/trace.js";
import { flatten, unflatten } from "../../front/tree.js";
import { localTrain, plainSgd, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import { squaredNorm } from "./trees.js";
import type { TensorSpec } from "../../../types/tensor.js";
import type { AnyModel, RoundData, RoundProgram, ScalarSpec, ServerScalar } from "./types.js";

// The random operations through loose signatures, as loose.ts gives the others: checked while tracing.
const draw = random as unknown as Record<"split" | "foldIn" | "normal", (...args: Value[]) => Value>;

export interface DpFedAvgOptions extends ClientTrainingOptions {
  /** Adaptive clipping by private quantile estimation (Andrew et al. 2021); fixed clipping when absent. */
  readonly adaptive?: boolean;
}

/** The hyperparameters of a DP-FedAvg round, as program inputs. */
export interface DpHypers {
  /** The clip norm C of this round, at the SERVER (adaptive clipping updates it). */
  readonly clip: Value;
  /** The update's noise multiplier: N(0, (noiseMultiplier C)^2) is added to the sum. */
  readonly noiseMultiplier: Value;
  /** The denominator m: the expected number of clients that report. */
  readonly expectedClients: Value;
  /** The run's key at the SERVER; folded with `round`, it draws this round's noise. */
  readonly key: Value;
  readonly round: Value;
  /** Adaptive clipping only: gamma, eta and sigma_b. */
  readonly targetQuantile?: Value;
  readonly clipLr?: Value;
  readonly countStddev?: Value;
}

export type DpFedAvgProgram<M extends AnyModel> = RoundProgram<
  M,
  {
    readonly clip: TensorSpec<[], "float32", "server">;
    readonly noiseMultiplier: ScalarSpec;
    readonly expectedClients: ScalarSpec;
    readonly key: TensorSpec<[2], "int32", "server">;
    readonly round: TensorSpec<[], "int32", "local">;
    readonly targetQuantile?: ScalarSpec;
    readonly clipLr?: ScalarSpec;
    readonly countStddev?: ScalarSpec;
  },
  { clip: ServerScalar }
>;

/** A client's update tree scaled to global L2 norm at most `clip`: delta min(1, clip / ||delta||). */
export function clipToNorm(delta: Value, clip: Value): { clipped: Value; norm: Value } {
  const norm = ops.sqrt(squaredNorm(delta));
  return { clipped: ops.mul(delta, ops.div(clip, ops.maximum(norm, clip))), norm };
}

/** Gaussian noise N(0, std^2) with the structure of a SERVER tree, one independent key per leaf. */
export function gaussianTreeNoise(like: Value, std: Value, key: Value): Value {
  const { leaves, def } = flatten(like, isTracer, "parameter tree");
  const keys: Value[] = leaves.length === 1 ? [key] : draw.split(key, leaves.length);
  return unflatten(
    def,
    leaves.map((leaf: Value, i: number) => ops.mul(draw.normal(keys[i], leaf.shape), std)),
  );
}

/** One DP-FedAvg round on traced values: the new parameters, the cohort's loss and the next clip norm. */
export function dpFedAvgRound(
  model: AnyModel,
  options: DpFedAvgOptions,
  params: Value,
  data: RoundData,
  lr: Value,
  hypers: DpHypers,
): { params: Value; loss: Value; clip: Value } {
  const clientOptimizer = options.clientOptimizer ?? plainSgd;
  const local = ops.map(
    (w: Value, clip: Value, x: Value, y: Value, mask: Value) => {
      const trained = localTrain(model, w, { x, y, mask }, clientOptimizer, lr);
      const { clipped, norm } = clipToNorm(ops.sub(trained.params, w), clip);
      return { clipped, below: ops.sub(ops.cast(ops.lessEqual(norm, clip), "float32"), 0.5), loss: trained.loss };
    },
    ops.broadcast(params),
    ops.broadcast(hypers.clip),
    data.x,
    data.y,
    data.mask,
  );
  const [updateKey, countKey] = draw.split(draw.foldIn(hypers.key, hypers.round), 2);
  const sum = ops.reduceSum(local.clipped);
  const noisy = ops.add(sum, gaussianTreeNoise(sum, ops.mul(hypers.noiseMultiplier, hypers.clip), updateKey));
  const next = ops.add(params, ops.div(noisy, hypers.expectedClients));
  const loss = ops.reduceWeightedMean(local.loss, data.count);
  if (!options.adaptive) return { params: next, loss, clip: hypers.clip };
  const noisyBelow = ops.add(ops.reduceSum(local.below), ops.mul(draw.normal(countKey, []), hypers.countStddev));
  const fractionBelow = ops.add(ops.div(noisyBelow, hypers.expectedClients), 0.5);
  const clip = ops.mul(hypers.clip, ops.exp(ops.mul(ops.neg(hypers.clipLr), ops.sub(fractionBelow, hypers.targetQuantile))));
  return { params: next, loss, clip };
}

/**
 * DP-FedAvg's round as a program: (server params, cohort batches, lr, clip@SERVER,
 * noiseMultiplier, expectedClients, key@SERVER, round[, targetQuantile, clipLr, countStddev])
 * -> (params, loss, clip).
 */
export function dpFedAvgProgram<M extends AnyModel>(model: M, options: DpFedAvgOptions = {}): DpFedAvgProgram<M> {
  const adaptive: InputSpecs = options.adaptive ? { targetQuantile: f32([]), clipLr: f32([]), countStddev: f32([]) } : {};
  const inputs = { clip: atServer(f32([])), noiseMultiplier: f32([]), expectedClients: f32([]), key: atServer(i32([2])), round: i32([]), ...adaptive };
  return roundProgram(model, options.adaptive ? "dp_fedavg_adaptive" : "dp_fedavg", inputs, (all: Value, data) =>
    dpFedAvgRound(model, options, all.params, data, all.lr, all),
  ) as never;
}

/**
 * Andrew et al.'s split of a round's noise multiplier z between the clipped-count estimate
 * (std sigma_b, sensitivity 1/2) and the update: z_delta = (z^-2 - (2 sigma_b)^-2)^(-1/2).
 * Undefined when sigma_b is too small for z (the count alone would spend the budget).
 */
export function dpNoiseSplit(noiseMultiplier: number, countStddev: number): number | undefined {
  if (noiseMultiplier === 0) return 0;
  const rest = noiseMultiplier ** -2 - (2 * countStddev) ** -2;
  return rest > 0 ? rest ** -0.5 : undefined;
}
