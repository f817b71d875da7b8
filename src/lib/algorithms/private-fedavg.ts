/**
 * DP-FedAvg and secure FedAvg under their long-standing names: FedAvg (fedavg.ts) with the
 * aggregator chains clip,dp and secure (src/lib/aggregators; docs/algorithms.md).
 *
 * DP-FedAvg (McMahan, Ramage, Talwar, Zhang 2018), with Poisson-sampled cohorts (fedtensor run
 * samples each client with probability q from the run's secret) and the uniform weights of
 * TFF's DifferentiallyPrivateFactory: each client's update is clipped to global L2 norm C, the
 * server adds N(0, (z C)^2) to the sum and divides by the expected cohort m (the fixed-
 * denominator estimator: one client changes the numerator by at most C, the add/remove pair
 * the Poisson-sampled Gaussian accountant assumes). Adaptive clipping (Andrew, Thakkar,
 * McMahan, Ramaswamy 2021) moves C towards a private quantile of the norms; the round's noise
 * multiplier z is split between the update and the clipped count (dpNoiseSplit), so the round
 * is as private as one Gaussian mechanism of multiplier z.
 *
 * Secure FedAvg (Bonawitz et al. 2017; TFF's secure weighted mean): each coordinate of a
 * client's update is clipped to [-clip, clip], and the server learns only sum_i n_i clip(u_i)
 * and sum_i n_i through secureSum. In one process this is a simulation: the server holds the
 * key every pair key derives from.
 *
 * Both declare the clients' batches private and report no training loss (a plain mean of
 * private losses would be a release outside the aggregator, FT109).
 */
import { aggregatorOf, type Aggregator, type ChainInputs } from "../aggregators/aggregator.js";
import { secureScale } from "../aggregators/aggregate.js";
import type { ClipStage, DpStage, SecureStage } from "../aggregators/stages.js";
import { fedAvg, fedAvgProgram } from "./fedavg.js";
import type { ClientTrainingOptions } from "./local.js";
import type { AggregatedRoundProgram, AnyModel, DpRoundHypers, ParamsAt, ReleasingRoundFunction, SecureRoundHypers, ServerScalar } from "./types.js";

export { gaussianTreeNoise } from "../../front/privacy.js";

export interface DpFedAvgOptions extends ClientTrainingOptions {
  /** Adaptive clipping by private quantile estimation (Andrew et al. 2021); fixed clipping when absent. */
  readonly adaptive?: boolean;
}

/** DP-FedAvg's chain, clip then dp, as a type: the program's inputs and outputs follow from it. */
type DpChain = Aggregator<true, ChainInputs<[ClipStage, DpStage]>>;
export type DpFedAvgProgram<M extends AnyModel> = AggregatedRoundProgram<M, DpChain>;

/** Secure aggregation's options: the secure stage's (bits, clip, maxWeight, maxClients, neighbours). */
export type SecureAggregationOptions = Omit<SecureStage, "kind">;

type SecureChain = Aggregator<true, ChainInputs<[SecureStage]>>;
export type SecureFedAvgProgram<M extends AnyModel> = AggregatedRoundProgram<M, SecureChain>;

/** The aggregator of DP-FedAvg: clip (fixed, its C the `clip` input, or adaptive), then dp. */
const dpChain = (adaptive: boolean) => aggregatorOf([{ kind: "clip", bound: adaptive ? "adaptive" : 1 }, { kind: "dp" }]) as DpChain;
const secureChain = (options: SecureAggregationOptions) => aggregatorOf([{ kind: "secure", ...options }]) as SecureChain;

/** The quantization scale of secure FedAvg's weighted updates, in [-clip maxWeight, clip maxWeight]. */
export const secureUpdateScale = (o: SecureAggregationOptions): number => secureScale(o.bits, o.maxClients, o.clip * o.maxWeight);

/**
 * DP-FedAvg's round as a program: (server params, private cohort batches, lr, clip@SERVER,
 * noiseMultiplier, expectedClients, key@SERVER, round[, targetQuantile, clipLr, countStddev])
 * -> (params, clip).
 */
export function dpFedAvgProgram<M extends AnyModel>(model: M, options: DpFedAvgOptions = {}): DpFedAvgProgram<M> {
  const name = options.adaptive ? "dp_fedavg_adaptive" : "dp_fedavg";
  return fedAvgProgram(model, { ...options, aggregator: dpChain(options.adaptive ?? false), name });
}

/** Secure FedAvg's round as a program: (server params, private cohort batches, lr, key@SERVER, round) -> params. */
export function secureFedAvgProgram<M extends AnyModel>(model: M, options: ClientTrainingOptions & SecureAggregationOptions): SecureFedAvgProgram<M> {
  return fedAvgProgram(model, { ...options, aggregator: secureChain(options), name: "secure_fedavg" });
}

/** DP-FedAvg's round as a typed function: (server params, the cohort's batches, hypers) -> (params, next clip) at the SERVER. */
export function dpFedAvg<M extends AnyModel>(model: M, options: DpFedAvgOptions = {}): ReleasingRoundFunction<DpRoundHypers, { params: ParamsAt<M, "server">; clip: ServerScalar }> {
  return fedAvg(model, { ...options, aggregator: dpChain(options.adaptive ?? false) });
}

/** Secure FedAvg's round as a typed function: (server params, the cohort's batches, { lr, key }) -> params at the SERVER. */
export function secureFedAvg<M extends AnyModel>(model: M, options: ClientTrainingOptions & SecureAggregationOptions): ReleasingRoundFunction<SecureRoundHypers, { params: ParamsAt<M, "server"> }> {
  return fedAvg(model, { ...options, aggregator: secureChain(options) });
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
