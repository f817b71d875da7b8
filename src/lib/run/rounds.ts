/**
 * How `fedtensor run` drives each algorithm: its round program, the server state it keeps
 * besides the model (optimiser moments, control variates) and the per-client state some
 * algorithms keep between a client's rounds (SCAFFOLD). One entry per algorithm.
 */
import type * as tf from "@tensorflow/tfjs";
import { ftError } from "../../errors/error.js";
import { fedAvgProgram } from "../algorithms/fedavg.js";
import type { AnyModel } from "../algorithms/types.js";
import type { CohortBatches } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import type { HostParams } from "../models/model.js";
import type { TensorTree } from "./checkpoint.js";
import type { RunConfig } from "./config.js";

export type DeviceTree = tf.Tensor | readonly DeviceTree[] | { readonly [key: string]: DeviceTree };

export interface TrainingState {
  readonly params: DeviceTree;
  /** Algorithm state at the server besides the parameters ({} when there is none). */
  readonly server: DeviceTree;
}

export interface RoundResult {
  readonly state: TrainingState;
  /** The cohort's mean training loss. */
  readonly loss: tf.Tensor;
}

export interface RoundRunner {
  /** The algorithm's server state for a fresh run, from the initial parameters. */
  initialServerState(params: HostParams<Record<string, unknown>>): TensorTree;
  round(state: TrainingState, batches: CohortBatches<HostData>, config: RunConfig): Promise<RoundResult>;
}

function fedAvgRunner(model: AnyModel): RoundRunner {
  const program = fedAvgProgram(model);
  return {
    initialServerState: () => ({}),
    async round(state, batches, config) {
      const { params, loss } = await program.run({
        params: state.params as never,
        x: batches.x,
        y: batches.y,
        mask: batches.mask,
        count: batches.count,
        lr: config.lr,
      });
      return { state: { params: params as DeviceTree, server: state.server }, loss };
    },
  };
}

const runners: Readonly<Record<string, (model: AnyModel) => RoundRunner>> = { fedavg: fedAvgRunner };

export function runnerFor(config: RunConfig, model: AnyModel): RoundRunner {
  const make = runners[config.algorithm];
  if (make === undefined) throw ftError("FT305", { option: "algorithm", why: `no algorithm '${config.algorithm}' in this build` });
  return make(model);
}
