/**
 * FedAvg (McMahan et al. 2017): every client of the cohort starts from the server model,
 * runs local SGD over its batches, and the server averages the resulting models weighted by
 * the clients' example counts.
 */
import { program } from "../../front/program.js";
import { f32 } from "../../front/specs.js";
import { clientBatchSpecs, localSgd, serverParamSpecs } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, Hyper, ParamsAt, RoundFunction, RoundProgram, ServerScalar } from "./types.js";

/** FedAvg's round as a typed function on traced values, for use inside a user's program. */
export function fedAvg<M extends AnyModel>(model: M): RoundFunction<{ lr: Hyper }, { params: ParamsAt<M, "server">; loss: ServerScalar }> {
  return ((params: Value, data: Value, hypers: { lr: Hyper }) => fedAvgRound(model, params, data, hypers.lr)) as never;
}

/** One FedAvg round on traced values: the new server parameters and the cohort's training loss. */
export function fedAvgRound(model: AnyModel, params: Value, data: Value, lr: Value): { params: Value; loss: Value } {
  const local = ops.map(
    (w: Value, x: Value, y: Value, mask: Value) => {
      const trained = localSgd(model, w, { x, y, mask }, lr);
      return { delta: ops.sub(trained.params, w), loss: trained.loss };
    },
    ops.broadcast(params),
    data.x,
    data.y,
    data.mask,
  );
  return {
    params: ops.add(params, ops.reduceWeightedMean(local.delta, data.count)),
    loss: ops.reduceWeightedMean(local.loss, data.count),
  };
}

/** FedAvg's round as a program: (server params, cohort batches, lr) -> (params, loss). */
export function fedAvgProgram<M extends AnyModel>(model: M): RoundProgram<M> {
  return program(
    { params: serverParamSpecs(model), ...clientBatchSpecs(model), lr: f32([]) } as never,
    ({ params, x, y, mask, count, lr }: Value) => fedAvgRound(model, params, { x, y, mask, count }, lr),
    { name: `fedavg_${model.name}` },
  ) as never;
}
