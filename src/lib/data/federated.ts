/**
 * Federated views of a dataset: which examples each client holds, which clients take part
 * in a round, and the padded, masked batches a round's cohort trains on.
 *
 * The examples stay in one shared LabelledDataset; a round copies only its cohort's
 * examples into the batch tensors. A CLIENTS value is one tensor [C, ...] (SPEC section 6),
 * so every client of a cohort gets the same number of batches: the largest client's, with
 * the others padded by examples whose mask is 0. `count` holds each client's real number
 * of examples, the weights of FedAvg's weighted mean.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { dropClients } from "./dropout.js";
import { checkInteger } from "./options.js";
import type { LabelledDataset } from "./dataset.js";
import { allocateLike, elementCount, type HostData, type HostTensor } from "./host-tensor.js";
import type { Partition } from "./partition.js";
import { poissonSample } from "./sampling.js";

/**
 * A data set split into clients: their names, the indices of each client's examples (and held-out
 * examples) in `train`, and the server's test set.
 *
 * @example
 * const train = loadMnist("train");
 * const data: FederatedDataset<Float32Array> = federate(train, loadMnist("test"), partitionIid(train.y.length, 100, Rng.fromSeed(0)));
 */
export interface FederatedDataset<X extends HostData = HostData> {
  /** A name per client, such as "client-007" or a president's name. */
  readonly clientIds: readonly string[];
  /** Per client, the indices of its examples in `train`. */
  readonly clientIndices: readonly Int32Array[];
  /** Per client, the indices in `train` of its held-out examples, which it never trains on (holdout.ts); absent when none are held out. */
  readonly clientHeldOut?: readonly Int32Array[];
  readonly train: LabelledDataset<X>;
  /** The held-out set the server evaluates on. */
  readonly test: LabelledDataset<X>;
}

/**
 * Padded batches: slots whose mask is 0 hold zeros and label 0.
 *
 * @example
 * import { batchEvaluation, loadMnist, type PaddedBatches } from "fedtensor/lib";
 * const test: PaddedBatches<Float32Array> = batchEvaluation(loadMnist("test"), 500);
 * console.log(test.x.shape, test.mask.shape); // [20, 500, 28, 28] [20, 500]
 */
export interface PaddedBatches<X extends HostData = HostData> {
  /** [..., nBatches, batchSize, ...featureShape] */
  readonly x: HostTensor<X>;
  /** [..., nBatches, batchSize] */
  readonly y: HostTensor<Int32Array>;
  /** [..., nBatches, batchSize], float32 1 or 0, so it multiplies per-example losses directly. */
  readonly mask: HostTensor<Float32Array>;
}

/**
 * A cohort's padded batches as host tensors: x, y and mask per client, with the clients' positions
 * in the data set and their example counts (the aggregation weights).
 *
 * @example
 * import { batchCohort, Rng, syntheticFedProx, type CohortBatches } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 0, beta: 0, clients: 5 }, Rng.fromSeed(0));
 * const batches: CohortBatches<Float32Array> = batchCohort(data, [1, 2], { batchSize: 10, rng: Rng.fromSeed(1) });
 * console.log(batches.clients, batches.count.data); // Int32Array [1, 2] and their example counts
 */
export interface CohortBatches<X extends HostData = HostData> extends PaddedBatches<X> {
  /** The cohort's client positions in the FederatedDataset, in tensor order. */
  readonly clients: Int32Array;
  /** [C] each client's number of distinct examples, float32 for use as aggregation weights. */
  readonly count: HostTensor<Float32Array>;
}

/**
 * batchCohort's options: the batch size, local epochs, the shuffle stream and the fewest batches
 * per client.
 *
 * @example
 * import { batchCohort, Rng, syntheticFedProx, type CohortBatchOptions } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 0.5, beta: 0.5, clients: 5 }, Rng.fromSeed(0));
 * const options: CohortBatchOptions = { batchSize: 10, epochs: 2, rng: Rng.fromSeed(1) };
 * const batches = batchCohort(data, [0, 3], options);
 */
export interface CohortBatchOptions {
  readonly batchSize: number;
  /** Local epochs: each client's examples are reshuffled this many times and concatenated. */
  readonly epochs?: number;
  /** Drives the shuffles; each client's order comes from rng.fork(`client:<position>`). */
  readonly rng: Rng;
  /** At least this many batches per client (a size bucket's), so that chunks of a bucket share one shape. */
  readonly steps?: number;
}

/**
 * roundCohort's options: the run's stream, the round, the clients per round, the batch size and
 * epochs, the dropout rate and, for DP rounds, the cohort sampled from the run's secret.
 *
 * @example
 * import { roundCohort, Rng, syntheticFedProx, type RoundOptions } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 1, beta: 1 }, Rng.fromSeed(0));
 * const options: RoundOptions = { rng: Rng.fromSeed(1), round: 3, clientsPerRound: 10, batchSize: 10, dropout: 0.1 };
 * const cohort = roundCohort(data, options); // cohort.dropped: the sampled clients that dropped out
 */
export interface RoundOptions {
  /** The run's stream; the round forks its own from it, so rounds do not depend on each other. */
  readonly rng: Rng;
  readonly round: number;
  readonly clientsPerRound: number;
  readonly batchSize: number;
  readonly epochs?: number;
  /** Each sampled client's probability of dropping out of the round (dropout.ts); 0 when absent. */
  readonly dropout?: number;
  /**
   * The round's sampled clients, ascending, when the caller sampled them (DP rounds: Poisson
   * sampling from the run's secret, poissonCohort); otherwise clientsPerRound of them are drawn
   * from the round's fork "cohort" of `rng`.
   */
  readonly cohort?: Int32Array;
}

/** A round's batches: those of the clients that survived dropout, and who dropped. */
export interface RoundCohort<X extends HostData = HostData> extends CohortBatches<X> {
  /** Sampled clients that dropped out: in no tensor of the batches. */
  readonly dropped: Int32Array;
}

/** Builds a FederatedDataset, checking the partition's indices and the two sets' agreement (FT302). */
export function federate<X extends HostData>(
  train: LabelledDataset<X>,
  test: LabelledDataset<X>,
  partition: Partition,
  clientIds: readonly string[] = partition.map((_, client) => `client-${String(client).padStart(3, "0")}`),
): FederatedDataset<X> {
  if (clientIds.length !== partition.length) {
    throw ftError("FT302", { what: "clientIds", why: `${clientIds.length} ids for ${partition.length} clients` });
  }
  if (new Set(clientIds).size !== clientIds.length) {
    throw ftError("FT302", { what: "clientIds", why: "ids must be unique" });
  }
  const summary = (set: LabelledDataset) => `features [${set.featureShape.join(", ")}], ${set.numClasses} classes`;
  if (summary(train) !== summary(test)) {
    const why = `${summary(test)} do not match the train set's ${summary(train)}`;
    throw ftError("FT302", { what: "test set", why });
  }
  const trainSize = train.y.length;
  // Copied: the caller's arrays may be plain numbers (NaN, 1.5 would be read as 0 and 1) and
  // may change after this check; the copies are the dataset's own.
  const clientIndices = partition.map((indices, client) => {
    const what = `client ${clientIds[client]}`;
    if (indices.length === 0) throw ftError("FT302", { what, why: "holds no example; every client needs at least one (partitionIid makes none empty)" });
    const bad = Array.prototype.findIndex.call(indices, (index: number) => !(Number.isInteger(index) && index >= 0 && index < trainSize));
    if (bad >= 0) throw ftError("FT302", { what, why: `example index ${indices[bad]} is not a whole number in [0, ${trainSize}), the train set's` });
    return Int32Array.from(indices);
  });
  return { clientIds: Object.freeze([...clientIds]), clientIndices: Object.freeze(clientIndices), train, test };
}

/**
 * `cohortSize` distinct client positions out of `numClients`, sorted ascending.
 *
 * @example
 * import { Rng, sampleCohort } from "fedtensor/lib";
 * const cohort = sampleCohort(100, 10, Rng.fromSeed(0).fork("round:0")); // 10 distinct clients of 100
 */
export function sampleCohort(numClients: number, cohortSize: number, rng: Rng): Int32Array {
  checkInteger("clientsPerRound", cohortSize, 1);
  if (cohortSize > numClients) {
    throw ftError("FT305", { option: "clientsPerRound", why: `${cohortSize} exceeds the ${numClients} clients` });
  }
  return rng.sample(numClients, cohortSize).sort();
}

/**
 * Poisson sampling (as DP-SGD's and DP-FedAvg's accountants assume: Abadi et al. 2016, McMahan
 * et al. 2018, Opacus): each of `numClients` clients joins independently with probability
 * `rate`, so the cohort's size is Binomial(numClients, rate) and may be 0. Ascending positions.
 *
 * @example
 * import { poissonCohort, RunSecret } from "fedtensor/lib";
 * const cohort = poissonCohort(1000, 0.01, RunSecret.generate().cohortStream(0)); // each client with probability 0.01, from a secret stream
 */
export function poissonCohort(numClients: number, rate: number, source: { float(): number }): Int32Array {
  checkInteger("clients", numClients, 1);
  if (!(rate >= 0 && rate <= 1)) throw ftError("FT305", { option: "samplingRate", why: `${rate} given; a sampling rate is in [0, 1]` });
  return poissonSample(numClients, rate, source);
}

/**
 * The cohort's training batches: x [C, nBatches, B, ...feature], y, mask [C, nBatches, B],
 * count [C]. nBatches = ceil(epochs * largest client / B), at least 1. A client's batches
 * depend only on its own examples and its fork of `rng`, not on the rest of the cohort
 * (beyond how much padding follows them).
 */
export function batchCohort<X extends HostData>(
  dataset: FederatedDataset<X>,
  clients: ArrayLike<number>,
  options: CohortBatchOptions,
): CohortBatches<X> {
  const { batchSize, epochs = 1, rng, steps = 1 } = options;
  checkInteger("batchSize", batchSize, 1);
  checkInteger("epochs", epochs, 1);
  const numClients = dataset.clientIndices.length;
  const cohort = Int32Array.from(clients, (client) => {
    if (!Number.isInteger(client) || client < 0 || client >= numClients) {
      throw ftError("FT305", { option: "clients", why: `client position ${client} is not in [0, ${numClients})` });
    }
    return client;
  });
  const sizes = Array.from(cohort, (client) => dataset.clientIndices[client]!.length);
  const largest = sizes.reduce((most, size) => Math.max(most, size), 0);
  const nBatches = Math.max(steps, batchesOf(largest, epochs, batchSize));
  const slotsPerClient = nBatches * batchSize;
  const batches = allocateBatches(dataset.train, [cohort.length, nBatches, batchSize]);
  cohort.forEach((client, position) => {
    const order = epochOrder(dataset.clientIndices[client]!, epochs, rng.fork(`client:${client}`));
    gatherExamples(dataset.train, order, position * slotsPerClient, batches);
  });
  const count: HostTensor<Float32Array> = { shape: [cohort.length], data: Float32Array.from(sizes) };
  return { ...batches, clients: cohort, count };
}

/** A client's examples for `epochs` local epochs: `indices` shuffled afresh for each, by the client's own `rng`. */
export function epochOrder(indices: ArrayLike<number>, epochs: number, rng: Rng): Int32Array {
  const order = new Int32Array(indices.length * epochs);
  for (let epoch = 0; epoch < epochs; epoch++) {
    const epochIndices = order.subarray(epoch * indices.length, (epoch + 1) * indices.length);
    epochIndices.set(indices);
    rng.shuffle(epochIndices);
  }
  return order;
}

/**
 * The whole of `dataset` in order, as x [nBatches, B, ...feature], y and mask [nBatches, B]:
 * the last batch is padded with masked slots. nBatches = ceil(size / B), at least 1.
 */
export function batchEvaluation<X extends HostData>(dataset: LabelledDataset<X>, batchSize: number): PaddedBatches<X> {
  checkInteger("batchSize", batchSize, 1);
  const size = dataset.y.length;
  const nBatches = Math.max(1, Math.ceil(size / batchSize));
  const batches = allocateBatches(dataset, [nBatches, batchSize]);
  gatherExamples(dataset, Int32Array.from({ length: size }, (_, i) => i), 0, batches);
  return batches;
}

/**
 * One round's sample and batches, with the run's fork layout in one place: the round's
 * stream is rng.fork(`round:<round>`), the cohort comes from its fork "cohort", who drops out
 * from its fork "dropout", and the shuffles from its fork "batches". A survivor's batches do
 * not depend on who else dropped.
 */
export function roundCohort<X extends HostData>(dataset: FederatedDataset<X>, options: RoundOptions): RoundCohort<X> {
  const sample = sampleRound(dataset, options);
  return { ...sample.batch(sample.clients), dropped: sample.dropped };
}

/**
 * A round's cohort before any of its data is copied: the clients that survived dropout, each
 * one's number of batches, and the batches of any group of them (a chunk), which are each
 * client's batches in the whole cohort's, only padded to the group's largest client (or
 * `steps`) instead of the cohort's.
 *
 * @example
 * import { Rng, sampleRound, syntheticFedProx, type RoundSample } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 1, beta: 1, clients: 10 }, Rng.fromSeed(0));
 * const sample: RoundSample<Float32Array> = sampleRound(data, { rng: Rng.fromSeed(1), round: 0, clientsPerRound: 5, batchSize: 10 });
 * const small = Array.from(sample.clients).filter((client) => sample.steps(client) <= 10);
 * const batches = sample.batch(small, 10); // those clients padded to 10 batches each
 */
export interface RoundSample<X extends HostData = HostData> {
  /** The sampled clients that survived dropout. */
  readonly clients: Int32Array;
  /** Sampled clients that dropped out. */
  readonly dropped: Int32Array;
  /** A client's (by position in the dataset) batches of real examples. */
  steps(client: number): number;
  batch(clients: ArrayLike<number>, steps?: number): CohortBatches<X>;
}

/**
 * The round's sample, with roundCohort's fork layout; data is copied only by `batch`.
 *
 * @example
 * import { Rng, sampleRound, syntheticFedProx } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 1, beta: 1, clients: 10 }, Rng.fromSeed(0));
 * const sample = sampleRound(data, { rng: Rng.fromSeed(1), round: 0, clientsPerRound: 4, batchSize: 10 });
 * const batches = sample.batch(sample.clients); // x [4, T, 10, 60], T the most steps of the four
 */
export function sampleRound<X extends HostData>(dataset: FederatedDataset<X>, options: RoundOptions): RoundSample<X> {
  checkInteger("round", options.round, 0);
  const roundRng = options.rng.fork(`round:${options.round}`);
  const sampled = options.cohort ?? sampleCohort(dataset.clientIndices.length, options.clientsPerRound, roundRng.fork("cohort"));
  const { survivors, dropped } = dropClients(sampled, options.dropout ?? 0, roundRng.fork("dropout"));
  const epochs = options.epochs ?? 1;
  const batches = roundRng.fork("batches");
  return {
    clients: survivors,
    dropped,
    steps: (client) => Math.max(1, batchesOf(dataset.clientIndices[client]!.length, epochs, options.batchSize)),
    batch: (group, steps) => batchCohort(dataset, group, { batchSize: options.batchSize, epochs, rng: batches, ...(steps === undefined ? {} : { steps }) }),
  };
}

/** The batches that `examples` examples fill over `epochs` epochs: batchCohort's padding and sampleRound's steps agree. */
function batchesOf(examples: number, epochs: number, batchSize: number): number {
  return Math.ceil((epochs * examples) / batchSize);
}

/** Zeroed batch tensors whose leading shape is `slotShape` (ending in the batch size). */
function allocateBatches<X extends HostData>(source: LabelledDataset<X>, slotShape: number[]): PaddedBatches<X> {
  const slots = elementCount(slotShape);
  const featureSize = elementCount(source.featureShape);
  return {
    x: { shape: [...slotShape, ...source.featureShape], data: allocateLike(source.x, slots * featureSize) },
    y: { shape: [...slotShape], data: new Int32Array(slots) },
    mask: { shape: [...slotShape], data: new Float32Array(slots) },
  };
}

/** Copies the examples `order` into consecutive slots from `firstSlot`, marking them real. */
function gatherExamples<X extends HostData>(
  source: LabelledDataset<X>,
  order: Int32Array,
  firstSlot: number,
  target: PaddedBatches<X>,
): void {
  const featureSize = elementCount(source.featureShape);
  const size = source.y.length;
  for (let i = 0; i < order.length; i++) {
    const example = order[i]!;
    // An index array written into after federate checked it: one compare, never a silent zero example.
    if (!(example >= 0 && example < size)) throw ftError("FT302", { what: "a client's example indices", why: `index ${example} is outside the ${size} examples (changed after federate?)` });
    const slot = firstSlot + i;
    target.x.data.set(source.x.subarray(example * featureSize, (example + 1) * featureSize), slot * featureSize);
    target.y.data[slot] = source.y[example]!;
    target.mask.data[slot] = 1;
  }
}
