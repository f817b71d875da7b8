/**
 * Options checked against the data they meet, once it is loaded: local epochs that would make
 * a round's batches larger than memory are FT305 naming the option, not a RangeError from a
 * typed array of impossible length. A --batch-size larger than every client's examples is
 * not an error: a client's batch is at most its own examples (as FedAvg implementations take
 * it, e.g. TFF's and Flower's dataset.batch), so the rounds batch by the largest client's
 * size instead, which computes the same masked means with less padding, and the run says so.
 */
import { totalmem } from "node:os";
import { ftError } from "../../errors/error.js";
import type { FederatedDataset } from "../data/federated.js";
import { elementCount, type HostData } from "../data/host-tensor.js";
import type { RunConfig } from "./config.js";

/** The longest typed array V8 makes (2^32 - 1 elements on 64-bit Node 20); shorter ones may still not fit in memory. */
const maxElements = 2 ** 32 - 1;

const gigabytes = (bytes: number) => `${(bytes / 1e9).toPrecision(3)} GB`;

const largestClient = (data: FederatedDataset<HostData>) => data.clientIndices.reduce((most, indices) => Math.max(most, indices.length), 0);

/** The batch size the rounds use: --batch-size, or the largest client's examples when every client holds fewer. */
export function roundBatchSize(config: Pick<RunConfig, "batchSize">, data: FederatedDataset<HostData>): number {
  return Math.min(config.batchSize, Math.max(1, largestClient(data)));
}

/** The run's one line saying that --batch-size was clamped to the clients' sizes; undefined when it was not. */
export function batchSizeNotice(config: Pick<RunConfig, "batchSize">, data: FederatedDataset<HostData>): string | undefined {
  const used = roundBatchSize(config, data);
  if (used === config.batchSize) return undefined;
  return `--batch-size ${config.batchSize} is more than the ${used} training examples of the largest client: a client's batch is at most its own examples, so batches hold at most ${used}`;
}

/**
 * FT305 when one chunk's batches (--local-epochs passes over the largest client's examples,
 * for the clients of a chunk) would exceed a typed array or half this machine's memory.
 */
export function checkOptionsAgainstData(config: Pick<RunConfig, "batchSize" | "localEpochs" | "chunkClients" | "clientsPerRound">, data: FederatedDataset<HostData>): void {
  const largest = largestClient(data);
  const batchSize = roundBatchSize(config, data);
  const clients = Math.min(config.chunkClients, config.clientsPerRound);
  const slots = clients * Math.ceil((config.localEpochs * largest) / batchSize) * batchSize;
  const elements = slots * elementCount(data.train.featureShape);
  const bytes = elements * 4;
  const memory = totalmem();
  if (elements > maxElements || bytes > memory / 2) {
    throw ftError("FT305", {
      option: "--local-epochs",
      why: `${config.localEpochs} passes over the largest client's ${largest} examples make ${slots} examples for a chunk of ${clients} clients, ${gigabytes(bytes)} of batches: more than ${elements > maxElements ? "a typed array holds (2^32 - 1 values)" : `half this machine's ${gigabytes(memory)} of memory`}`,
    });
  }
}
