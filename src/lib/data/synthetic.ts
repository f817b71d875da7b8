/**
 * FedProx's Synthetic(alpha, beta) (Li et al., "Federated Optimization in Heterogeneous
 * Networks", MLSys 2020, section 5.1 and its generate_synthetic.py), generated offline from a
 * seed. Client k draws u_k ~ N(0, alpha^2) and B_k ~ N(0, beta^2); its model W_k (60 x 10) and
 * b_k (10) have entries ~ N(u_k, 1); its inputs x ~ N(v_k, Sigma) with v_k's entries
 * ~ N(B_k, 1) and Sigma diagonal, Sigma_jj = j^-1.2; its labels y = argmax(softmax(x W_k + b_k)).
 * alpha sets how much the clients' models differ, beta how much their inputs do;
 * Synthetic(0, 0) still differs per client, and `iid: true` is the paper's Synthetic-IID (one
 * W, b and v = 0 shared by all). Client sizes follow the paper's power law: floor(lognormal(4,
 * 2)) + 50 examples each. Each client's examples are split 80/20 into its training and test
 * examples, as the paper does; the server's test set is the union of the clients' 20%.
 */
import { ftError } from "../../errors/error.js";
import type { Rng } from "../random.js";
import { labelledDataset } from "./dataset.js";
import { federate, type FederatedDataset } from "./federated.js";
import { checkInteger } from "./options.js";

/**
 * syntheticFedProx's options (Li et al. 2020's Synthetic(alpha, beta)): how much the clients'
 * models and inputs differ, and the numbers of clients, features and classes.
 *
 * @example
 * const data = syntheticFedProx({ alpha: 1, beta: 1 } satisfies SyntheticOptions, Rng.fromSeed(0)); // Synthetic(1, 1)
 */
export interface SyntheticOptions {
  /** How much the clients' models differ: u_k ~ N(0, alpha^2). The paper: 0, 0.5 or 1. */
  readonly alpha: number;
  /** How much the clients' inputs differ: B_k ~ N(0, beta^2). The paper: 0, 0.5 or 1. */
  readonly beta: number;
  /** Clients (the paper: 30). */
  readonly clients?: number;
  /** Features per example (the paper: 60). */
  readonly features?: number;
  /** Classes (the paper: 10). */
  readonly classes?: number;
  /** The paper's Synthetic-IID: one model and one input distribution for every client; alpha and beta unused. */
  readonly iid?: boolean;
  /** The fraction of each client's examples kept for testing (the paper: 0.2). */
  readonly testFraction?: number;
}

/**
 * One client's number of examples, the paper's power law: floor(lognormal(4, 2)) + 50.
 *
 * @example
 * import { Rng, syntheticClientSize } from "fedtensor/lib";
 * const rng = Rng.fromSeed(0);
 * const sizes = Array.from({ length: 30 }, () => syntheticClientSize(rng)); // each >= 50, heavy-tailed
 */
export function syntheticClientSize(rng: Rng): number {
  return Math.floor(Math.exp(rng.normal(4, 2))) + 50;
}

function checkScale(option: string, value: number): void {
  if (!(Number.isFinite(value) && value >= 0)) throw ftError("FT305", { option, why: `a standard deviation is a finite number >= 0, got ${value}` });
}

/** Draws `count` values ~ N(mean, std^2). */
const normals = (rng: Rng, count: number, mean: number, std: number): Float64Array => Float64Array.from({ length: count }, () => rng.normal(mean, std));

/**
 * Synthetic(alpha, beta) as a federated data set (client ids "synthetic-000", ...).
 *
 * @example
 * import { Rng, syntheticFedProx } from "fedtensor/lib";
 * const data = syntheticFedProx({ alpha: 0.5, beta: 0.5 }, Rng.fromSeed(0)); // Synthetic(0.5, 0.5): 30 clients, 60 features, 10 classes
 * const iid = syntheticFedProx({ alpha: 0, beta: 0, iid: true }, Rng.fromSeed(0));
 */
export function syntheticFedProx(options: SyntheticOptions, rng: Rng): FederatedDataset<Float32Array> {
  const { alpha, beta, clients = 30, features = 60, classes = 10, iid = false, testFraction = 0.2 } = options;
  checkScale("alpha", alpha);
  checkScale("beta", beta);
  checkInteger("clients", clients, 1);
  checkInteger("features", features, 1);
  checkInteger("classes", classes, 2);
  if (!(testFraction >= 0 && testFraction < 1)) throw ftError("FT305", { option: "testFraction", why: `a fraction in [0, 1), got ${testFraction}` });
  const deviation = Float64Array.from({ length: features }, (_, j) => Math.sqrt((j + 1) ** -1.2));
  const shared = { w: normals(rng.fork("iid:w"), features * classes, 0, 1), b: normals(rng.fork("iid:b"), classes, 0, 1) };
  const sizes = Array.from({ length: clients }, (_, k) => syntheticClientSize(rng.fork(`size:${k}`)));
  const total = sizes.reduce((a, b) => a + b, 0);
  const x = new Float32Array(total * features);
  const y = new Int32Array(total);
  const trainParts: number[][] = [];
  const testIds: number[] = [];
  let next = 0;
  for (let k = 0; k < clients; k++) {
    const own = rng.fork(`client:${k}`);
    const u = own.normal(0, alpha);
    const bias = own.normal(0, beta);
    const w = iid ? shared.w : normals(own, features * classes, u, 1);
    const b = iid ? shared.b : normals(own, classes, u, 1);
    const v = iid ? new Float64Array(features) : normals(own, features, bias, 1);
    const first = next;
    for (let i = 0; i < sizes[k]!; i++, next++) {
      for (let j = 0; j < features; j++) x[next * features + j] = own.normal(v[j]!, deviation[j]!);
      // argmax of softmax is argmax of the logits.
      let best = 0;
      let bestLogit = -Infinity;
      for (let c = 0; c < classes; c++) {
        let logit = b[c]!;
        for (let j = 0; j < features; j++) logit += x[next * features + j]! * w[j * classes + c]!;
        if (logit > bestLogit) [best, bestLogit] = [c, logit];
      }
      y[next] = best;
    }
    const order = own.permutation(sizes[k]!);
    const held = Math.floor(testFraction * sizes[k]!);
    trainParts.push(Array.from(order.subarray(held), (i) => first + i));
    for (const i of order.subarray(0, held)) testIds.push(first + i);
  }
  const all = labelledDataset("synthetic", { x, y, featureShape: [features], numClasses: classes });
  // The training set is every example (clients index into it); the test set is the held-out ones, copied.
  const test = labelledDataset("synthetic test", {
    x: Float32Array.from({ length: testIds.length * features }, (_, i) => x[testIds[Math.floor(i / features)]! * features + (i % features)]!),
    y: Int32Array.from(testIds, (i) => y[i]!),
    featureShape: [features],
    numClasses: classes,
  });
  const ids = sizes.map((_, k) => `synthetic-${String(k).padStart(3, "0")}`);
  return federate(all, test, trainParts.map((part) => Int32Array.from(part).sort()), ids);
}
