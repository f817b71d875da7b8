/**
 * Partitions of a labelled dataset's examples into clients, the three standard ways of
 * simulating federated data from a centralised set:
 * - IID: a random split into equal parts;
 * - label shards (McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks
 *   from Decentralized Data"): sort by label, cut into shards, deal each client a few shards,
 *   so most clients see only two digits;
 * - Dirichlet label skew (Hsu et al. 2019): each class is split across the clients in
 *   proportions drawn from Dirichlet(alpha); small alpha gives few classes per client.
 *
 * A partition is one Int32Array of example indices per client, sorted ascending (the order
 * carries no information: batching shuffles per round). All randomness comes from the Rng
 * passed in, so the same seed gives the same partition.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { checkInteger, checkPositive } from "./options.js";

/**
 * A partition of a data set into clients: per client, the indices of its examples.
 *
 * @example
 * const clients: Partition = partitionIid(60_000, 100, Rng.fromSeed(0)); // 100 clients of 600 indices
 */
export type Partition = Int32Array[];

/**
 * partitionShards's options (McMahan et al. 2017's pathological non-IID split): the number of
 * label-sorted shards and the shards per client.
 *
 * @example
 * const clients = partitionShards(loadMnist("train").y, { numShards: 200, shardsPerClient: 2 } satisfies ShardOptions, Rng.fromSeed(0));
 */
export interface ShardOptions {
  /** How many equal shards the label-sorted examples are cut into (the paper: 200). */
  readonly numShards: number;
  /** How many shards each client gets (the paper: 2); numShards / shardsPerClient clients. */
  readonly shardsPerClient: number;
}

/**
 * partitionDirichlet's options: the number of clients, the concentration alpha and the fewest
 * examples a client may get.
 *
 * @example
 * const partition = partitionDirichlet(loadMnist("train").y, 10, { numClients: 100, alpha: 0.5 } satisfies DirichletOptions, Rng.fromSeed(0));
 */
export interface DirichletOptions {
  readonly numClients: number;
  /** The concentration: 0.1 is strongly skewed, 100 close to IID. */
  readonly alpha: number;
  /**
   * Redraw the whole partition until every client has at least this many examples, as the
   * reference implementations do (they use 10); 0 accepts empty clients.
   */
  readonly minExamplesPerClient?: number;
}

const MAX_DIRICHLET_ATTEMPTS = 1000;

/** Splits `numExamples` examples uniformly at random into `numClients` parts whose sizes differ by at most 1. */
export function partitionIid(numExamples: number, numClients: number, rng: Rng): Partition {
  checkInteger("numClients", numClients, 1);
  if (numClients > numExamples) {
    throw ftError("FT305", { option: "numClients", why: `${numClients} clients for ${numExamples} examples would leave clients without any` });
  }
  const order = rng.permutation(numExamples);
  return Array.from({ length: numClients }, (_, client) => {
    const start = Math.floor((client * numExamples) / numClients);
    const end = Math.floor(((client + 1) * numExamples) / numClients);
    return order.slice(start, end).sort();
  });
}

/**
 * The FedAvg paper's pathological non-IID split: examples sorted by label (stable, so ties
 * keep their order), cut into `numShards` contiguous shards, and each client dealt
 * `shardsPerClient` shards at random. MNIST train with 200 x 2 gives 100 clients of 600.
 */
export function partitionShards(labels: Int32Array, options: ShardOptions, rng: Rng): Partition {
  const { numShards, shardsPerClient } = options;
  checkInteger("numShards", numShards, 1);
  checkInteger("shardsPerClient", shardsPerClient, 1);
  if (numShards % shardsPerClient !== 0) {
    throw ftError("FT305", {
      option: "shardsPerClient",
      why: `must divide numShards (${numShards}) so every client gets the same number of shards`,
    });
  }
  if (numShards > labels.length) {
    throw ftError("FT305", { option: "numShards", why: `${numShards} shards of ${labels.length} examples` });
  }
  const sorted = stableSortByLabel(labels);
  const shardOrder = rng.permutation(numShards);
  const numClients = numShards / shardsPerClient;
  return Array.from({ length: numClients }, (_, client) => {
    const parts: Int32Array[] = [];
    for (let k = 0; k < shardsPerClient; k++) {
      const shard = shardOrder[client * shardsPerClient + k]!;
      const start = Math.floor((shard * labels.length) / numShards);
      const end = Math.floor(((shard + 1) * labels.length) / numShards);
      parts.push(sorted.subarray(start, end));
    }
    return concat(parts).sort();
  });
}

/**
 * Label skew: for each class, its examples are shuffled and split in Dirichlet(alpha) proportions.
 *
 * @example
 * import { federate, loadMnist, partitionDirichlet, Rng } from "fedtensor/lib";
 * const train = loadMnist("train");
 * const partition = partitionDirichlet(train.y, 10, { numClients: 100, alpha: 0.1, minExamplesPerClient: 10 }, Rng.fromSeed(0));
 * const data = federate(train, loadMnist("test"), partition); // strong label skew
 */
export function partitionDirichlet(
  labels: Int32Array,
  numClasses: number,
  options: DirichletOptions,
  rng: Rng,
): Partition {
  const { numClients, alpha, minExamplesPerClient = 0 } = options;
  checkInteger("numClients", numClients, 1);
  checkInteger("minExamplesPerClient", minExamplesPerClient, 0);
  checkPositive("alpha", alpha);
  if (minExamplesPerClient * numClients > labels.length) {
    throw ftError("FT305", {
      option: "minExamplesPerClient",
      why: `${numClients} clients x ${minExamplesPerClient} exceeds the ${labels.length} examples`,
    });
  }
  const byClass = indicesByClass(labels, numClasses);
  const concentration = new Array<number>(numClients).fill(alpha);
  for (let attempt = 0; attempt < MAX_DIRICHLET_ATTEMPTS; attempt++) {
    const clientParts: Int32Array[][] = Array.from({ length: numClients }, () => []);
    for (const members of byClass) {
      const shuffled = rng.shuffle(members.slice());
      const proportions = rng.dirichlet(concentration);
      let cumulative = 0;
      let start = 0;
      for (let client = 0; client < numClients; client++) {
        cumulative += proportions[client]!;
        // The last client takes the remainder, so rounding never loses an example.
        const end = client === numClients - 1 ? shuffled.length : Math.floor(cumulative * shuffled.length);
        clientParts[client]!.push(shuffled.subarray(start, end));
        start = end;
      }
    }
    const partition = clientParts.map((parts) => concat(parts).sort());
    if (partition.every((indices) => indices.length >= minExamplesPerClient)) return partition;
  }
  throw ftError("FT305", {
    option: "minExamplesPerClient",
    why:
      `no Dirichlet(${alpha}) draw in ${MAX_DIRICHLET_ATTEMPTS} gave every client ${minExamplesPerClient} ` +
      "examples; raise alpha or lower it",
  });
}

/** How many of each label the examples at `indices` have. */
export function labelCounts(labels: Int32Array, indices: Int32Array, numClasses: number): Int32Array {
  const counts = new Int32Array(numClasses);
  for (const index of indices) counts[labels[index]!]! += 1;
  return counts;
}

function indicesByClass(labels: Int32Array, numClasses: number): Int32Array[] {
  const sorted = stableSortByLabel(labels);
  const largest = sorted.length > 0 ? labels[sorted[sorted.length - 1]!]! : 0;
  if (largest >= numClasses) {
    throw ftError("FT302", { what: "labels", why: `label ${largest} is outside [0, ${numClasses})` });
  }
  const counts = labelCounts(labels, sorted, numClasses);
  const groups: Int32Array[] = [];
  let start = 0;
  for (const count of counts) {
    groups.push(sorted.subarray(start, start + count));
    start += count;
  }
  return groups;
}

/** Example indices ordered by label, ties in index order (a counting sort, O(n)). */
function stableSortByLabel(labels: Int32Array): Int32Array {
  let numClasses = 0;
  for (const label of labels) {
    if (label < 0) throw ftError("FT302", { what: "labels", why: `negative label ${label}` });
    numClasses = Math.max(numClasses, label + 1);
  }
  const next = new Int32Array(numClasses + 1);
  for (const label of labels) next[label + 1]! += 1;
  for (let k = 1; k <= numClasses; k++) next[k]! += next[k - 1]!;
  const sorted = new Int32Array(labels.length);
  for (let i = 0; i < labels.length; i++) sorted[next[labels[i]!]!++] = i;
  return sorted;
}

function concat(parts: readonly Int32Array[]): Int32Array {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Int32Array(total);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
