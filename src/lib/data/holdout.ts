/**
 * Per-client held-out data for federated evaluation: each client's examples split into a
 * training part and a held-out part it evaluates on, as in FedJAX's and TFF's federated data
 * sets (EMNIST and Shakespeare ship a train and a test split per client).
 *
 * A client of n examples holds out ceil(fraction * n), but always keeps one to train on, so
 * a client of one example holds none out. Which examples are held out is drawn from the
 * client's own fork of the Rng (`client:<position>`): the split of one client does not depend
 * on the others, and the same seed gives the same split.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { batchCohort, type CohortBatches, type FederatedDataset } from "./federated.js";
import type { HostData } from "./host-tensor.js";

/**
 * How many of a client's `examples` are held out at `fraction`.
 *
 * @example
 * import { heldOutCount } from "fedtensor/lib";
 * console.log(heldOutCount(51, 0.2), heldOutCount(1, 0.5)); // 11 0: a client keeps at least one example to train on
 */
export function heldOutCount(examples: number, fraction: number): number {
  return Math.max(0, Math.min(Math.ceil(fraction * examples), examples - 1));
}

/**
 * `dataset` with each client's examples split: clientIndices keeps the training part, clientHeldOut the rest.
 *
 * @example
 * import { holdOutPerClient, Rng, syntheticFedProx } from "fedtensor/lib";
 * const data = holdOutPerClient(syntheticFedProx({ alpha: 1, beta: 1 }, Rng.fromSeed(0)), 0.1, Rng.fromSeed(1));
 * console.log(data.clientIndices[0]!.length, data.clientHeldOut![0]!.length); // about 90% and 10% of client 0's examples
 */
export function holdOutPerClient<X extends HostData>(dataset: FederatedDataset<X>, fraction: number, rng: Rng): FederatedDataset<X> {
  if (!(Number.isFinite(fraction) && fraction >= 0 && fraction < 1)) {
    throw ftError("FT305", { option: "clientHoldout", why: `expected a share of each client's examples in [0, 1), got ${fraction}` });
  }
  if (dataset.clientHeldOut !== undefined) {
    throw ftError("FT305", { option: "clientHoldout", why: "the data set's clients hold out examples already" });
  }
  const train: Int32Array[] = [];
  const heldOut: Int32Array[] = [];
  dataset.clientIndices.forEach((indices, client) => {
    const held = heldOutCount(indices.length, fraction);
    const order = rng.fork(`client:${client}`).shuffle(indices.slice());
    heldOut.push(order.slice(0, held).sort());
    train.push(order.slice(held).sort());
  });
  return { ...dataset, clientIndices: train, clientHeldOut: heldOut };
}

/**
 * The held-out batches of `clients` (positions in the data set): x [C, T, B, ...feature], y and
 * mask [C, T, B], padded to the group's largest client (or `steps` batches), in example order.
 * `count` is each client's number of held-out examples. FT305 when the data set holds none out.
 *
 * @example
 * import { batchHeldOut, holdOutPerClient, Rng, syntheticFedProx } from "fedtensor/lib";
 * const data = holdOutPerClient(syntheticFedProx({ alpha: 1, beta: 1, clients: 10 }, Rng.fromSeed(0)), 0.2, Rng.fromSeed(1));
 * const heldOut = batchHeldOut(data, [0, 1, 2], 16, Rng.fromSeed(2)); // x [3, T, 16, 60], count: each client's held-out examples
 */
export function batchHeldOut<X extends HostData>(dataset: FederatedDataset<X>, clients: ArrayLike<number>, batchSize: number, rng: Rng, steps?: number): CohortBatches<X> {
  if (dataset.clientHeldOut === undefined) {
    throw ftError("FT305", { option: "clientHoldout", why: "federated evaluation needs held-out data on the clients: give --client-holdout a share above 0" });
  }
  // The held-out examples in the training slots of a view of the data set; evaluation is a sum, so their shuffled order does not matter.
  const view = { ...dataset, clientIndices: dataset.clientHeldOut };
  return batchCohort(view, clients, { batchSize, rng, ...(steps === undefined ? {} : { steps }) });
}
