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
import { allocateLike, elementCount, type HostData, type HostTensor } from "../data/host-tensor.js";

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

/**
 * The cohort cut into secure groups (src/transform/mapreduce.ts: a chunk is one SecAgg+ group),
 * none smaller than `least` clients: in bucket order, as few groups as chunks of `chunkClients`
 * would need, fewer when that would leave one below `least`, their sizes differing by one at
 * most. A group may then hold up to twice `chunkClients`; each is padded to its largest client's
 * bucket. FT329 when a chunk could never hold a group (`chunkClients` below `least`); a cohort
 * smaller than `least` is one group, which its secure sum refuses (FT112).
 */
export function secureGroups(clients: Int32Array, stepsOf: (client: number) => number, chunkClients: number, least: number): Chunk[] {
  if (chunkClients < least) throw ftError("FT329", { least, chunk: chunkClients });
  const ordered = cohortChunks(clients, stepsOf, clients.length).flatMap((c) => Array.from(c.clients, (client) => ({ client, steps: c.steps })));
  const count = secureGroupCount(ordered.length, chunkClients, least);
  const groups: Chunk[] = [];
  for (let g = 0, start = 0; g < count; g++) {
    const members = ordered.slice(start, (start += Math.floor(ordered.length / count) + (g < ordered.length % count ? 1 : 0)));
    groups.push({ clients: Int32Array.from(members, (m) => m.client), steps: Math.max(...members.map((m) => m.steps)) });
  }
  return groups;
}

/** How many groups secureGroups cuts `clients` clients into: their sizes are floor(clients / count) and one more. */
export const secureGroupCount = (clients: number, chunkClients: number, least: number): number => Math.max(1, Math.min(Math.ceil(clients / chunkClients), Math.floor(clients / least)));

/** What a round program takes from a cohort: its CLIENTS inputs. */
export const cohortData = (b: CohortBatches<HostData>) => ({ x: b.x, y: b.y, mask: b.mask, count: b.count });

/** Whether a program can be streamed: it has a MapReduce form (a robust stage's whole-cohort comparison has none). */
function streamable(ir: ProgramIR, cohortSize: number, keepClientOutputs: boolean): boolean {
  try {
    cachedForm(ir, cohortSize, keepClientOutputs);
    return true;
  } catch (error) {
    if (error instanceof FedTensorError && ["FT313", "FT314", "FT315"].includes(error.code)) return false;
    throw error;
  }
}

/** Runs a round's chunks elsewhere (src/lib/run/engine: BullMQ workers) from references to their clients. */
export interface ChunkEngine {
  /** The partial accumulators of `chunks` of a round of `form`, whose program's inputs are laid out as `inputTree`. */
  partials(form: MapReduceForm, inputTree: TreeDef, chunks: readonly PlacedChunk[]): RemoteChunks<tf.Tensor>;
  /**
   * Its chunks run at the clients themselves (fedtensor serve), which keep the program's CLIENTS
   * outputs as their state: the round's result leaves them out, and the state inputs the runner
   * gives are only where a client without state starts.
   */
  readonly keepsClientState?: boolean;
}

/**
 * A chunk as an engine runs it: with its clients' places in the cohort (clientIndex()) and their
 * rows of the per-client inputs, except those drawn by the worker (only their shape travels).
 */
export interface PlacedChunk extends Chunk {
  readonly positions: Int32Array;
  readonly perClient: Record<string, HostTensor>;
  /** The int32 per-client inputs the worker fills from its own CSPRNG, with their shapes. */
  readonly drawn: Record<string, readonly number[]>;
  /** The chunk's clients' state (its rows of CohortRunSettings.clientState), which the worker returns updated with the partial accumulator. */
  readonly state?: ChunkState;
}

/** Client state as a round takes it: the program's state input and its leaves, one row per client. */
export interface ChunkState {
  readonly input: string;
  readonly rows: Readonly<Record<string, HostTensor>>;
}

/** A per-client input: row p of `data` ([cohort, ...]) is the value of the cohort's client at place p. */
export interface PerClientInput extends HostTensor {
  /**
   * Each client's own randomness (distributed DP's client keys): a worker's job never carries
   * these rows; the worker draws them from its CSPRNG, as each client would. In this process
   * the given rows stand in (derived from the run's secret, so --resume replays them).
   */
  readonly drawnByWorker?: boolean;
}

/**
 * CLIENTS inputs besides the data, by place in the cohort (the attackers' flags, AFL's client
 * ids, distributed DP's client keys): a chunk, here or in a worker's job, takes its clients' rows.
 */
export type PerClientInputs = Readonly<Record<string, PerClientInput>>;

/** The rows `positions` of each per-client input, as host tensors [positions, ...]. */
export function perClientSlice(perClient: PerClientInputs, positions: ArrayLike<number>): Record<string, HostTensor> {
  return Object.fromEntries(
    Object.entries(perClient).map(([name, { shape, data }]) => {
      const row = elementCount(shape.slice(1));
      const rows = allocateLike(data, positions.length * row);
      Array.from(positions, (p, i) => rows.set(data.subarray(p * row, (p + 1) * row), i * row));
      return [name, { shape: [positions.length, ...shape.slice(1)], data: rows }];
    }),
  );
}

export interface CohortRunSettings {
  /** Clients per chunk. */
  readonly chunkClients: number;
  readonly options: RunOptions;
  /** Where the chunks run when not in this process. */
  readonly engine?: ChunkEngine;
  /** The round's per-client inputs besides the data. */
  readonly perClient?: PerClientInputs;
  /**
   * The fewest clients of a chunk (distributed DP's --min-clients: each chunk's noisy sum, all a
   * worker's reader sees, then carries the noise the accounting assumes); FT329 if a chunk cannot hold them.
   */
  readonly groupMin?: number;
  /**
   * The cohort's client state (keepOnClients): the program's state input, its leaves stacked
   * [cohort, ...] in cohort order. Each chunk takes its clients' rows, here or in its worker's
   * job, and returns their new state with its partial accumulator.
   */
  readonly clientState?: ChunkState;
}

/**
 * Runs a round program on a cohort: streamed in bucketed chunks whenever the program has a
 * MapReduce form, in this process or through `settings.engine`, so both give the same bits;
 * whole for programs without one. Client state (settings.clientState) goes with its chunk and
 * comes back in the program's output, in cohort order, either way.
 */
export async function runOnCohort(
  program: { readonly ir: ProgramIR; run(inputs: never, options: never): Promise<unknown> },
  serverInputs: Record<string, unknown>,
  sample: RoundSample<HostData>,
  settings: CohortRunSettings,
): Promise<unknown> {
  if (!Number.isInteger(settings.chunkClients) || settings.chunkClients < 1) throw ftError("FT305", { option: "chunkClients", why: `expected a whole number of clients of at least 1, got ${settings.chunkClients}` });
  const kept = settings.engine?.keepsClientState === true;
  const streams = streamable(program.ir, sample.clients.length, kept);
  const least = Math.max(settings.groupMin ?? 0, streams ? cachedForm(program.ir, sample.clients.length, kept).secureGroupMin : 0);
  const stepsOf = (client: number) => sample.steps(client);
  // A round with a secure sum (or a group minimum) is cut into groups of at least its minClients; the others into bucketed chunks.
  const chunks = least > 0 ? secureGroups(sample.clients, stepsOf, settings.chunkClients, least) : cohortChunks(sample.clients, stepsOf, settings.chunkClients);
  const place = new Map(Array.from(sample.clients, (client, i) => [client, i]));
  const positions = chunks.map((chunk) => Int32Array.from(chunk.clients, (client) => place.get(client)!));
  const perClient = settings.perClient ?? {};
  const stateOf = (at: ArrayLike<number>): ChunkState | undefined => (settings.clientState === undefined ? undefined : { input: settings.clientState.input, rows: perClientSlice(settings.clientState.rows, at) });
  const stateInput = (at: ArrayLike<number>) => {
    const state = stateOf(at);
    return state === undefined ? {} : { [state.input]: state.rows };
  };
  if (streams && settings.engine !== undefined) {
    const inputs = Object.entries(perClient);
    const sent = Object.fromEntries(inputs.filter(([, input]) => input.drawnByWorker !== true));
    const drawn = inputs.filter(([, input]) => input.drawnByWorker === true);
    const placed = chunks.map((chunk, k) => ({
      ...chunk,
      positions: positions[k]!,
      perClient: perClientSlice(sent, positions[k]!),
      drawn: Object.fromEntries(drawn.map(([name, input]) => [name, [chunk.clients.length, ...input.shape.slice(1)]])),
      ...(settings.clientState === undefined || kept ? {} : { state: stateOf(positions[k]!)! }),
    }));
    const remote = settings.engine.partials(cachedForm(program.ir, sample.clients.length, kept), program.ir.inputTree, placed);
    // Served clients keep their own state: the stacked states are only where one without state starts, shared with the round's inputs.
    const shared = kept && settings.clientState !== undefined ? { ...serverInputs, [settings.clientState.input]: settings.clientState.rows } : serverInputs;
    return runStreamed(program.ir, { inputs: shared, cohortSize: sample.clients.length, chunks: [], positions: (k) => positions[k]!, keptAtClients: kept }, settings.options, true, remote);
  }
  // Streamed even as one chunk: the whole-cohort program sums in another order, so only the
  // streamed form gives the bits that a run whose chunks go to workers gives (docs/distributed.md).
  if (!streams) {
    const everyone = sample.clients.map((_, i) => i);
    return program.run({ ...serverInputs, ...cohortData(sample.batch(sample.clients)), ...perClientSlice(perClient, everyone), ...stateInput(everyone) } as never, settings.options as never);
  }
  const data = function* () {
    for (const [k, chunk] of chunks.entries()) yield { ...cohortData(sample.batch(chunk.clients, chunk.steps)), ...perClientSlice(perClient, positions[k]!), ...stateInput(positions[k]!) };
  };
  return runStreamed(program.ir, { inputs: serverInputs, cohortSize: sample.clients.length, chunks: data(), positions: (k) => positions[k]! }, settings.options);
}
