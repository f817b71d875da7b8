/**
 * How a round's cohort reaches its program: whole (one padded tensor per input, as before), or
 * streamed in chunks through the program's MapReduce form (src/runtime/mapreduce.ts).
 *
 * Streamed, clients are grouped in size buckets by their number of batches, rounded up to the
 * next of 1, 2, 3, 4, 6, 8, 12, 16, ... (at most 1.5x padding; few distinct shapes, so few
 * compiled forms), and each bucket is cut into chunks of at most `chunkClients` clients. A
 * chunk's data is copied from the dataset when the chunk runs, padded to its bucket only:
 * memory is bounded by the chunk, work follows the real examples. Chunks run, and their partial
 * accumulators merge, in a fixed order (bucket, then client position), so a run is
 * reproducible whatever the machine's timing.
 */
import { FedTensorError, ftError } from "../../errors/error.js";
import type * as tf from "@tensorflow/tfjs";
import type { ProgramIR, TreeDef } from "../../ir/types.js";
import { cachedForm, runStreamed, type RemoteChunks } from "../../runtime/mapreduce.js";
import type { RunOptions } from "../../runtime/run.js";
import type { MapReduceForm } from "../../transform/mapreduce.js";
import type { CohortBatches, RoundSample } from "../data/federated.js";
import type { HostData } from "../data/host-tensor.js";

/** The smallest of 1, 2, 3, 4, 6, 8, 12, 16, ... that is at least `steps`. */
export function bucketSteps(steps: number): number {
  let bucket = 1;
  while (bucket < steps) bucket = Number.isInteger(Math.log2(bucket)) && bucket >= 2 ? (bucket * 3) / 2 : bucket === 1 ? 2 : (bucket * 4) / 3;
  return bucket;
}

export interface Chunk {
  readonly clients: Int32Array;
  /** Batches per client in this chunk: its bucket's. */
  readonly steps: number;
}

/** The cohort cut into bucketed chunks, in merge order. */
export function cohortChunks(clients: Int32Array, stepsOf: (client: number) => number, chunkClients: number): Chunk[] {
  const buckets = new Map<number, number[]>();
  for (const client of clients) {
    const steps = bucketSteps(stepsOf(client));
    const bucket = buckets.get(steps);
    if (bucket === undefined) buckets.set(steps, [client]);
    else bucket.push(client);
  }
  const chunks: Chunk[] = [];
  for (const steps of [...buckets.keys()].sort((a, b) => a - b)) {
    const members = buckets.get(steps)!;
    for (let start = 0; start < members.length; start += chunkClients) chunks.push({ clients: Int32Array.from(members.slice(start, start + chunkClients)), steps });
  }
  return chunks;
}

/** What a round program takes from a cohort: its CLIENTS inputs. */
export const cohortData = (b: CohortBatches<HostData>) => ({ x: b.x, y: b.y, mask: b.mask, count: b.count });

/** Whether a program can be streamed: it has a MapReduce form (SCAFFOLD's client outputs have none). */
function streamable(ir: ProgramIR, cohortSize: number): boolean {
  try {
    cachedForm(ir, cohortSize);
    return true;
  } catch (error) {
    if (error instanceof FedTensorError && ["FT313", "FT314", "FT315"].includes(error.code)) return false;
    throw error;
  }
}

/** Runs a round's chunks elsewhere (src/lib/run/engine: BullMQ workers) from references to their clients. */
export interface ChunkEngine {
  /** The partial accumulators of `chunks` of a round of `form`, whose program's inputs are laid out as `inputTree`. */
  partials(form: MapReduceForm, inputTree: TreeDef, chunks: readonly Chunk[]): RemoteChunks<tf.Tensor>;
}

export interface CohortRunSettings {
  /** Clients per chunk. */
  readonly chunkClients: number;
  readonly options: RunOptions;
  /** Where the chunks run when not in this process. */
  readonly engine?: ChunkEngine;
  /** CLIENTS inputs besides the batches, for the given clients (distributed DP's client keys). */
  readonly clientInputs?: (clients: Int32Array) => Record<string, unknown>;
}

/**
 * Runs a round program on a cohort: streamed in bucketed chunks whenever the program has a
 * MapReduce form, in this process or through `settings.engine`, so both give the same bits;
 * whole for programs without one (such as SCAFFOLD's).
 */
export async function runOnCohort(
  program: { readonly ir: ProgramIR; run(inputs: never, options: never): Promise<unknown> },
  serverInputs: Record<string, unknown>,
  sample: RoundSample<HostData>,
  settings: CohortRunSettings,
): Promise<unknown> {
  if (!Number.isInteger(settings.chunkClients) || settings.chunkClients < 1) throw ftError("FT305", { option: "chunkClients", why: `expected a whole number of clients of at least 1, got ${settings.chunkClients}` });
  const chunks = cohortChunks(sample.clients, (c) => sample.steps(c), settings.chunkClients);
  const streams = streamable(program.ir, sample.clients.length);
  if (streams && settings.engine !== undefined) {
    const remote = settings.engine.partials(cachedForm(program.ir, sample.clients.length), program.ir.inputTree, chunks);
    return runStreamed(program.ir, { inputs: serverInputs, cohortSize: sample.clients.length, chunks: [] }, settings.options, true, remote);
  }
  // Streamed even as one chunk: the whole-cohort program sums in another order, so only the
  // streamed form gives the bits that a run whose chunks go to workers gives (docs/distributed.md).
  const extra = (clients: Int32Array) => settings.clientInputs?.(clients) ?? {};
  if (!streams) return program.run({ ...serverInputs, ...cohortData(sample.batch(sample.clients)), ...extra(sample.clients) } as never, settings.options as never);
  const data = function* () {
    for (const chunk of chunks) yield { ...cohortData(sample.batch(chunk.clients, chunk.steps)), ...extra(chunk.clients) };
  };
  return runStreamed(program.ir, { inputs: serverInputs, cohortSize: sample.clients.length, chunks: data() }, settings.options);
}
