/**
 * Options checked against the data they meet, once it is loaded: a batch larger than any
 * client holds, or local epochs that would make a round's batches larger than memory, are
 * FT305 naming the option, not a RangeError from a typed array of impossible length.
 */
import { totalmem } from "node:os";
import { ftError } from "../../errors/error.js";
import type { FederatedDataset } from "../data/federated.js";
import { elementCount, type HostData } from "../data/host-tensor.js";
import type { RunConfig } from "./config.js";

/** The longest typed array V8 makes (2^32 - 1 elements on 64-bit Node 20); shorter ones may still not fit in memory. */
const maxElements = 2 ** 32 - 1;

const gigabytes = (bytes: number) => `${(bytes / 1e9).toPrecision(3)} GB`;

/**
 * FT305 when --batch-size exceeds the largest client's training examples (a batch of padding
 * only), or when one chunk's batches (--local-epochs passes over the largest client's
 * examples, for the clients of a chunk) would exceed a typed array or half this machine's memory.
 */
export function checkOptionsAgainstData(config: Pick<RunConfig, "batchSize" | "localEpochs" | "chunkClients" | "clientsPerRound">, data: FederatedDataset<HostData>): void {
  const largest = data.clientIndices.reduce((most, indices) => Math.max(most, indices.length), 0);
  if (config.batchSize > largest) {
    throw ftError("FT305", {
      option: "--batch-size",
      why: `${config.batchSize} is more than the ${largest} training examples of the largest client: every batch would be mostly padding; give at most ${largest}`,
    });
  }
  const clients = Math.min(config.chunkClients, config.clientsPerRound);
  const slots = clients * Math.ceil((config.localEpochs * largest) / config.batchSize) * config.batchSize;
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
