/**
 * DiLoCo-style outer optimisation (Douillard et al. 2023): clients ("workers") train locally
 * from the server model (here with the library's local SGD, where DiLoCo uses AdamW); the
 * outer gradient is the server model minus the example-weighted mean of the client models,
 * and the server applies Nesterov momentum to it, with the momentum buffer at the SERVER:
 *   g = x - mean(x_i);   buffer = momentum buffer + g;   x = x - serverLr (g + momentum buffer)
 */
import { f32 } from "../../front/specs.js";
import { meanClientDelta, roundProgram, serverParamSpecs } from "./local.js";
import { ops, type Value } from "./loose.js";
import { nesterovStep } from "./server-optimizers.js";
import type { AnyModel, Hyper, ParamsAt, ParamSpecsAt, RoundData, RoundFunction, RoundOutputs, RoundProgram, ScalarSpec } from "./types.js";

export interface DiLoCoOptions {
  /** The outer Nesterov momentum (default 0.9, as in the paper). */
  readonly momentum?: number;
}

export interface DiLoCoHypers<Buffer> {
  /** The clients' (inner) SGD learning rate. */
  readonly lr: Hyper;
  /** The outer learning rate (0.7 in the paper). */
  readonly serverLr: Hyper;
  /** The outer momentum buffer, at the SERVER. */
  readonly buffer: Buffer;
}

export type DiLoCoProgram<M extends AnyModel> = RoundProgram<
  M,
  { readonly serverLr: ScalarSpec; readonly buffer: ParamSpecsAt<M, "server"> },
  { buffer: ParamsAt<M, "server"> }
>;

/** The DiLoCo round as a typed function on traced values, for use inside a user's program. */
export function diloco<M extends AnyModel>(
  model: M,
  options: DiLoCoOptions = {},
): RoundFunction<DiLoCoHypers<ParamsAt<M, "server">>, RoundOutputs<M> & { buffer: ParamsAt<M, "server"> }> {
  return ((params: Value, data: RoundData, hypers: DiLoCoHypers<Value>) => dilocoRound(model, options, params, data, hypers)) as never;
}

/** One DiLoCo round on traced values. */
export function dilocoRound(
  model: AnyModel,
  options: DiLoCoOptions,
  params: Value,
  data: RoundData,
  { lr, serverLr, buffer }: DiLoCoHypers<Value>,
): { params: Value; loss: Value; buffer: Value } {
  const { delta, loss } = meanClientDelta(model, params, data, lr);
  const step = nesterovStep(params, ops.neg(delta), buffer, serverLr, options.momentum ?? 0.9);
  return { params: step.params, loss, buffer: step.buffer };
}

/**
 * The DiLoCo round as a program: (server params, cohort batches, lr, serverLr, buffer) ->
 * (params, loss, buffer). The buffer starts at zero.
 */
export function dilocoProgram<M extends AnyModel>(model: M, options: DiLoCoOptions = {}): DiLoCoProgram<M> {
  return roundProgram(model, "diloco", { serverLr: f32([]), buffer: serverParamSpecs(model) }, ({ params, lr, serverLr, buffer }, data) =>
    dilocoRound(model, options, params, data, { lr, serverLr, buffer }),
  ) as never;
}
