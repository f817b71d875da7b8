/**
 * DP-FedAvg (McMahan, Ramage, Talwar, Zhang 2018, "Learning Differentially Private Recurrent
 * Language Models"), with Poisson-sampled cohorts (fedtensor run samples each client with
 * probability q from the run's secret) and the uniform weights of TFF's
 * DifferentiallyPrivateFactory:
 *   each client trains locally from the server model; its update (the whole tree) is clipped
 *   to global L2 norm C: delta_i * min(1, C / ||delta_i||);
 *   the server adds N(0, (z C)^2) to every coordinate of the sum and divides by the expected
 *   cohort size m (the paper's fixed-denominator estimator with uniform weights: one client
 *   changes the numerator by at most C, whatever the others do: with add/remove neighbours, the
 *   pair the Poisson-sampled Gaussian accountant assumes).
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
 * The clipping, the sum and the noise are the language's dpSum (src/front/privacy.ts), the
 * aggregator that may carry private data: the program declares the clients' batches private,
 * and tracing proves that nothing else computed from them reaches the SERVER (FT109). The
 * noise is drawn at the SERVER from the round's key, split per parameter leaf; the clients
 * draw nothing. Unlike FedAvg, the round reports no training loss: a plain mean of the
 * clients' losses would be a release outside the guarantee (TFF reports it anyway).
 */
import { f32, i32, atServer } from "../../front/specs.js";
import type { InputSpecs, Program } from "../../front/program.js";
import { dpSum as privateSum } from "../../front/privacy.js";
import * as random from "../../front/random.js";
import { clientDelta, roundProgram, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import { squaredNorm } from "./trees.js";
import type { TensorSpec } from "../../../types/tensor.js";
import type { AnyModel, ParamsAt, PrivateRoundInputs, RoundData, ScalarSpec, ServerScalar } from "./types.js";

// The random operations and dpSum through loose signatures, as loose.ts gives the others: checked while tracing.
const draw = random as unknown as Record<"split" | "foldIn", (...args: Value[]) => Value>;
const dpSum = privateSum as (...args: Value[]) => Value;
export { gaussianTreeNoise } from "../../front/privacy.js";

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

export type DpFedAvgProgram<M extends AnyModel> = Program<
  PrivateRoundInputs<M> & {
    readonly clip: TensorSpec<[], "float32", "server">;
    readonly noiseMultiplier: ScalarSpec;
    readonly expectedClients: ScalarSpec;
    readonly key: TensorSpec<[2], "int32", "server">;
    readonly round: TensorSpec<[], "int32", "local">;
    readonly targetQuantile?: ScalarSpec;
    readonly clipLr?: ScalarSpec;
    readonly countStddev?: ScalarSpec;
  },
  { params: ParamsAt<M, "server">; clip: ServerScalar }
>;

/**
 * One DP-FedAvg round on traced values: the new parameters and the next clip norm. The
 * clients' updates reach the SERVER only through dpSum (and, with adaptive clipping, so do
 * the clipped-count bits, clip 1/2: |b_i| = 1/2, so the clip leaves them as they are, and
 * noise multiplier 2 sigma_b gives noise of std sigma_b), so the round traces with private
 * client data. The cohort's training loss is not reported: a plain mean of private losses
 * would leave the clients unprotected (FT109).
 */
export function dpFedAvgRound(
  model: AnyModel,
  options: DpFedAvgOptions,
  params: Value,
  data: RoundData,
  lr: Value,
  hypers: DpHypers,
): { params: Value; clip: Value } {
  const local = ops.map(
    (w: Value, clip: Value, x: Value, y: Value, mask: Value) => {
      // A member with no example (the stand-in of an empty Poisson cohort) contributes exactly
      // nothing, not even its clipped-count bit: the round then releases the noise alone.
      const present = ops.minimum(ops.sum(mask), 1);
      const delta = ops.mul(clientDelta(model, w, { x, y, mask }, lr, options).delta, present);
      // The clipped-count bit only with adaptive clipping: an unused output of map is still computed.
      if (!options.adaptive) return { delta };
      const norm = ops.sqrt(squaredNorm(delta));
      return { delta, below: ops.mul(ops.sub(ops.cast(ops.lessEqual(norm, clip), "float32"), 0.5), present) };
    },
    ops.broadcast(params),
    ops.broadcast(hypers.clip),
    data.x,
    data.y,
    data.mask,
  );
  const [updateKey, countKey] = draw.split(draw.foldIn(hypers.key, hypers.round), 2);
  const noisy = dpSum(local.delta, { clip: hypers.clip, noiseMultiplier: hypers.noiseMultiplier, key: updateKey });
  const next = ops.add(params, ops.div(noisy, hypers.expectedClients));
  if (!options.adaptive) return { params: next, clip: hypers.clip };
  const noisyBelow = dpSum(local.below, { clip: 0.5, noiseMultiplier: ops.mul(hypers.countStddev, 2), key: countKey });
  const fractionBelow = ops.add(ops.div(noisyBelow, hypers.expectedClients), 0.5);
  const clip = ops.mul(hypers.clip, ops.exp(ops.mul(ops.neg(hypers.clipLr), ops.sub(fractionBelow, hypers.targetQuantile))));
  return { params: next, clip };
}

/**
 * DP-FedAvg's round as a program: (server params, cohort batches, lr, clip@SERVER,
 * noiseMultiplier, expectedClients, key@SERVER, round[, targetQuantile, clipLr, countStddev])
 * -> (params, clip), the batches private.
 */
export function dpFedAvgProgram<M extends AnyModel>(model: M, options: DpFedAvgOptions = {}): DpFedAvgProgram<M> {
  const adaptive: InputSpecs = options.adaptive ? { targetQuantile: f32([]), clipLr: f32([]), countStddev: f32([]) } : {};
  const inputs = { clip: atServer(f32([])), noiseMultiplier: f32([]), expectedClients: f32([]), key: atServer(i32([2])), round: i32([]), ...adaptive };
  return roundProgram(
    model,
    options.adaptive ? "dp_fedavg_adaptive" : "dp_fedavg",
    inputs,
    (all: Value, data) => dpFedAvgRound(model, options, all.params, data, all.lr, all),
    { private: true },
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
