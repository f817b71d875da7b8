/**
 * Quantity skew (Li et al., "Federated Learning on Non-IID Data Silos: An Experimental Study",
 * ICDE 2022, "quantity-based label imbalance"'s companion "quantity skew"): the examples are
 * shuffled and cut into client parts whose sizes are Dirichlet(alpha) proportions of the whole,
 * so each client's labels follow the data set's but their numbers differ; small alpha gives a
 * few large clients and many small ones. Works for any data set (labels are not read).
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { checkInteger, checkPositive } from "./options.js";
import type { Partition } from "./partition.js";

/**
 * partitionQuantity's options: the number of clients, the concentration of their shares and the
 * fewest examples per client.
 *
 * @example
 * const clients = partitionQuantity(60_000, { numClients: 100, alpha: 0.5 } satisfies QuantitySkewOptions, Rng.fromSeed(0));
 */
export interface QuantitySkewOptions {
  readonly numClients: number;
  /** The concentration of the clients' shares: 0.1 is strongly skewed, 100 close to equal. */
  readonly alpha: number;
  /** Every client gets at least this many examples (default 1): they are dealt first, the rest by the shares. */
  readonly minExamplesPerClient?: number;
}

/**
 * Splits `numExamples` examples among clients in Dirichlet(alpha) proportions (at least `minExamplesPerClient` each).
 *
 * @example
 * import { federate, loadMnist, partitionQuantity, Rng } from "fedtensor/lib";
 * const train = loadMnist("train");
 * const partition = partitionQuantity(train.y.length, { numClients: 100, alpha: 0.5 }, Rng.fromSeed(0)); // clients of very different sizes
 * const data = federate(train, loadMnist("test"), partition);
 */
export function partitionQuantity(numExamples: number, options: QuantitySkewOptions, rng: Rng): Partition {
  const { numClients, alpha, minExamplesPerClient = 1 } = options;
  checkInteger("numClients", numClients, 1);
  checkInteger("minExamplesPerClient", minExamplesPerClient, 0);
  checkPositive("alpha", alpha);
  const spare = numExamples - numClients * minExamplesPerClient;
  if (spare < 0) {
    throw ftError("FT305", { option: "numClients", why: `${numClients} clients x ${minExamplesPerClient} examples exceed the ${numExamples} examples` });
  }
  const shares = rng.dirichlet(new Array<number>(numClients).fill(alpha));
  const order = rng.permutation(numExamples);
  const parts: Partition = [];
  let cumulative = 0;
  let start = 0;
  for (let client = 0; client < numClients; client++) {
    cumulative += shares[client]!;
    // The last client takes the remainder, so rounding never loses an example.
    const extra = client === numClients - 1 ? spare : Math.floor(cumulative * spare);
    const end = (client + 1) * minExamplesPerClient + extra;
    parts.push(order.slice(start, end).sort());
    start = end;
  }
  return parts;
}
