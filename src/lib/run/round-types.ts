/**
 * The types of a run's rounds (src/lib/run/rounds.ts drives them): the state a run keeps on
 * the device between rounds, and what a runner does with it.
 */
import type { Tensor as TfTensor } from "@tensorflow/tfjs-core";
import type { RoundSample } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";
import type { HostParams } from "../models/model.js";
import type { TensorTree } from "./checkpoint.js";
import type { ChunkEngine } from "./cohort.js";
import type { RunConfig } from "./config.js";

export type DeviceTree = TfTensor | readonly DeviceTree[] | { readonly [key: string]: DeviceTree };
type Params = HostParams<Record<string, unknown>>;

export interface TrainingState {
  readonly params: DeviceTree;
  /** State at the server besides the parameters: the algorithm's, the aggregator's (a dp stage's clip), or { algorithm, aggregator } when both keep one ({} when none does). */
  readonly server: DeviceTree;
  /** Per-client state on the host, by client position ({} when the algorithm keeps none). */
  readonly clients: { readonly [client: string]: TensorTree };
}

export interface RoundResult {
  readonly state: TrainingState;
  /** The cohort's mean training loss; none under a releasing aggregator (dp, secure), whose clients' losses are private. */
  readonly loss: TfTensor | undefined;
}

/** Where a round stands: its number, and the engine that runs its chunks when not in this process. */
export interface RoundContext {
  readonly round: number;
  readonly engine?: ChunkEngine;
}

export interface RoundRunner {
  /** The algorithm's server state for a fresh run, from the initial parameters. */
  initialServerState(params: Params): TensorTree;
  /** One round (`at.round`, from 1) on the sampled cohort, whose data the runner copies in (by chunk when it streams, through `at.engine` when workers run the chunks). */
  round(state: TrainingState, cohort: RoundSample<HostData>, config: RunConfig, at: RoundContext): Promise<RoundResult>;
}

