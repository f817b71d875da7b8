/**
 * DP-FedAvg's and secure FedAvg's rounds as typed round functions on traced values, for use
 * inside a user's program, as fedAvg(model) is FedAvg's. Their bodies are the rounds of
 * dp-fedavg.ts and secure-fedavg.ts; these give them their public types:
 * - dpFedAvg's client data may be private: it reaches the SERVER only through dpSum, and the
 *   result is dpSum's release (tracing proves it; docs/language.md "Privacy").
 * - secureFedAvg's client data may be private too: it reaches the SERVER only through
 *   secureSum (the round reports no training loss), and the result is the secure sums'.
 */
import { dpFedAvgRound, type DpFedAvgOptions } from "./dp-fedavg.js";
import type { ClientTrainingOptions } from "./local.js";
import type { Value } from "./loose.js";
import { secureFedAvgRound, type SecureAggregationOptions } from "./secure-fedavg.js";
import type { AnyModel, DpRoundHypers, ParamsAt, ReleasingRoundFunction, SecureRoundHypers, ServerScalar } from "./types.js";

/** DP-FedAvg's round as a typed function: (server params, the cohort's batches, hypers) -> (params, next clip) at the SERVER. */
export function dpFedAvg<M extends AnyModel>(
  model: M,
  options: DpFedAvgOptions = {},
): ReleasingRoundFunction<DpRoundHypers, { params: ParamsAt<M, "server">; clip: ServerScalar }> {
  return ((params: Value, data: Value, hypers: Value) => dpFedAvgRound(model, options, params, data, hypers.lr, hypers)) as never;
}

/** Secure FedAvg's round as a typed function: (server params, the cohort's batches, { lr, key }) -> params at the SERVER. */
export function secureFedAvg<M extends AnyModel>(
  model: M,
  options: ClientTrainingOptions & SecureAggregationOptions,
): ReleasingRoundFunction<SecureRoundHypers, { params: ParamsAt<M, "server"> }> {
  return ((params: Value, data: Value, hypers: Value) => secureFedAvgRound(model, options, params, data, hypers.lr, hypers.key)) as never;
}
