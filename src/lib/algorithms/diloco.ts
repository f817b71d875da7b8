/**
 * DiLoCo-style outer optimisation (Douillard et al. 2023): clients ("workers") train locally
 * from the server model with AdamW, the paper's inner optimiser (weight decay 0.1 as there;
 * the options may give another); the outer gradient is the server model minus the
 * example-weighted mean of the client models, and the server applies Nesterov momentum to it,
 * with the momentum buffer at the SERVER:
 *   g = x - mean(x_i);   buffer = momentum buffer + g;   x = x - serverLr (g + momentum buffer)
 */
import { adamw } from "../optimizers/optimizers.js";
import { fedAvgM, fedAvgMProgram, type FedAvgMHypers, type FedAvgMProgram } from "./fedavgm.js";
import type { ClientOptimizer } from "./local.js";
import type { AggregatorOptions } from "./aggregation.js";
import type { Aggregator } from "../aggregators/aggregator.js";
import type { AggregatedRoundFunction, AnyModel, ParamsAt, RoundData, RoundOutputs } from "./types.js";

/**
 * dilocoProgram's options: the outer Nesterov momentum, the inner optimiser and the aggregator.
 *
 * @example
 * const round = dilocoProgram(transformerModel(), { momentum: 0.9 } satisfies DiLoCoOptions);
 */
export interface DiLoCoOptions extends AggregatorOptions {
  /** The outer Nesterov momentum (default 0.9, as in the paper). */
  readonly momentum?: number;
  /** The inner (client) optimiser (default AdamW with weight decay 0.1). */
  readonly innerOptimizer?: ClientOptimizer;
}

/**
 * DiLoCo's inner optimiser: AdamW with the paper's weight decay.
 *
 * @example
 * import { dilocoInnerOptimizer, fedAvgProgram, transformerModel } from "fedtensor/lib";
 * const round = fedAvgProgram(transformerModel(), { clientOptimizer: dilocoInnerOptimizer }); // FedAvg with DiLoCo's AdamW clients
 */
export const dilocoInnerOptimizer: ClientOptimizer = (learningRate) => adamw(learningRate, { weightDecay: 0.1 });

/**
 * DiLoCo's hyper-parameters: FedAvgM's, lr being the inner and serverLr the outer learning rate (0.7 in the paper).
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, diloco, logistic, serverParamSpecs, type DiLoCoHypers, type ParamsAt } from "fedtensor/lib";
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), buffer: serverParamSpecs(logistic) }, ({ params, lr, buffer, ...data }) => {
 *   const hypers: DiLoCoHypers<ParamsAt<typeof logistic, "server">> = { lr, serverLr: 0.7, buffer };
 *   return diloco(logistic)(params, data, hypers);
 * });
 */
export type DiLoCoHypers<Buffer> = FedAvgMHypers<Buffer>;
/**
 * DiLoCo's round program: FedAvgM's, with the inner and outer learning rates.
 *
 * @example
 * const round: DiLoCoProgram<typeof mlp2nn> = dilocoProgram(mlp2nn);
 */
export type DiLoCoProgram<M extends AnyModel> = FedAvgMProgram<M>;

/** DiLoCo as FedAvgM with Nesterov momentum and the inner optimiser. */
const asFedAvgM = (options: DiLoCoOptions) => ({
  momentum: options.momentum ?? 0.9,
  nesterov: true,
  clientOptimizer: options.innerOptimizer ?? dilocoInnerOptimizer,
  ...(options.aggregator === undefined ? {} : { aggregator: options.aggregator }),
});

/**
 * The DiLoCo round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { clientBatchSpecs, diloco, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = diloco(logistic, { momentum: 0.9 }); // inner AdamW, outer Nesterov momentum
 * const round = program({ params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), buffer: serverParamSpecs(logistic) }, ({ params, lr, buffer, ...data }) =>
 *   step(params, data, { lr, serverLr: 0.7, buffer }),
 * );
 */
export function diloco<M extends AnyModel, A extends Aggregator = Aggregator<false>>(
  model: M,
  options: DiLoCoOptions & { readonly aggregator?: A } = {},
): AggregatedRoundFunction<A, DiLoCoHypers<ParamsAt<M, "server">>, RoundOutputs<M> & { buffer: ParamsAt<M, "server"> }, RoundData, "diloco"> {
  // FedAvgM's round under DiLoCo's name: only the name in its FT109 message differs.
  return fedAvgM(model, asFedAvgM(options)) as never;
}

/**
 * The DiLoCo round as a program: (server params, cohort batches, lr, serverLr, buffer) ->
 * (params, loss, buffer). The buffer starts at zero.
 *
 * @example
 * import { dilocoProgram, filledLike, Rng, transformerModel } from "fedtensor/lib";
 * const model = transformerModel({ sequenceLength: 32 });
 * const round = dilocoProgram(model); // the inputs of fedAvgMProgram: lr (inner), serverLr (outer, 0.7 in the paper), buffer
 * const buffer = filledLike(model.init(Rng.fromSeed(0)), 0);
 */
export function dilocoProgram<M extends AnyModel>(model: M, options: DiLoCoOptions = {}): DiLoCoProgram<M> {
  return fedAvgMProgram(model, asFedAvgM(options), "diloco");
}
