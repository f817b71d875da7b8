/**
 * How an algorithm takes an aggregator (src/lib/aggregators/): its round program gets the
 * aggregator's inputs and state, declares its client data private when the aggregator
 * releases (dp, secure or distributed-dp), and reports the cohort's training loss only when it does not (a
 * plain mean of private losses would be a release outside the aggregator, FT109).
 */
import type { InputSpecs } from "../../front/program.js";
import { ftError } from "../../errors/error.js";
import { meanAggregator, type Aggregator } from "../aggregators/aggregator.js";
import { noisingKinds } from "../aggregators/stages.js";
import { roundProgram } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, RoundData } from "./types.js";

/**
 * The aggregator option every round takes: how the server combines the clients' updates (the
 * example-weighted mean by default).
 *
 * @example
 * const options: AggregatorOptions = { aggregator: meanAggregator };
 */
export interface AggregatorOptions {
  /** How the server combines the clients' updates; the example-weighted mean when absent. */
  readonly aggregator?: Aggregator;
}

export const aggregatorIn = (options: AggregatorOptions): Aggregator => options.aggregator ?? meanAggregator;

/**
 * roundProgram with the aggregator's inputs (its state first) after `extraInputs`, the client
 * data private when the aggregator releases; named by the algorithm, prefixed by its chain
 * unless that is the mean (clip_dp_fedavg). FT305 when the algorithm cannot take the
 * aggregator.
 */
export function aggregatedRoundProgram(
  model: AnyModel,
  algorithm: string,
  extraInputs: InputSpecs,
  round: (inputs: Value, data: RoundData) => Value,
  options: AggregatorOptions,
): unknown {
  requireAggregator(algorithm, options);
  const agg = aggregatorIn(options);
  const name = agg.name === "mean" ? algorithm : `${agg.name.replace(/[,-]/g, "_")}_${algorithm}`;
  return roundProgram(model, name, { ...extraInputs, ...agg.state, ...agg.inputs }, round, agg.releases ? { private: true } : {});
}

/** { loss: the cohort's example-weighted mean loss }, or {} under a releasing aggregator. */
export function reportedLoss(options: AggregatorOptions, losses: Value, data: RoundData): { loss?: Value } {
  return aggregatorIn(options).releases ? {} : { loss: ops.reduceWeightedMean(losses, data.count) };
}

/**
 * Why an algorithm (by its --algorithm name) cannot take an aggregator, or undefined when it
 * can: every algorithm whose server step consumes an aggregate of client updates takes any
 * chain, except where a per-client value or a second release would escape it.
 */
export function aggregatorRefusal(algorithm: string, agg: Aggregator): string | undefined {
  const noised = agg.stages.some((s) => noisingKinds.has(s.kind));
  switch (algorithm) {
    case "afl":
      return agg.releases
        ? "AFL's ascent on lambda puts each client's loss in its own coordinate, and its worst loss is one client's: both release per-client losses that neither a noised sum nor a secure sum covers"
        : undefined;
    case "qffl":
      return agg.releases
        ? "q-FFL weighs each client's step by h_k = q F_k^(q-1) ||dw_k||^2 + L F_k^q, from its loss F_k: dp's and distributed-dp's means weigh clients alike, and a secure sum needs a declared range that these unbounded weights have not"
        : undefined;
    case "mime":
      return noised
        ? "Mime aggregates the full-batch gradients before the clients train and their deltas after, two releases a round, and the accountant counts one noised release a round (MimeLite sends both in one exchange: --algorithm mimelite)"
        : undefined;
    default:
      return undefined;
  }
}

/** FT305 when `algorithm` cannot take the options' aggregator, with the reason. */
export function requireAggregator(algorithm: string, options: AggregatorOptions): void {
  const agg = aggregatorIn(options);
  const why = aggregatorRefusal(algorithm, agg);
  if (why !== undefined) throw ftError("FT305", { option: "aggregator", why: `${algorithm} cannot take the aggregator ${agg.name}: ${why}` });
}
