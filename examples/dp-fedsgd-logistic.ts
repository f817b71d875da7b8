/**
 * DP-FedSGD for logistic regression, written from docs/guide.md and docs/language.md alone:
 * a binary task (synthetic, labels from a known weight vector plus noise) over 50 clients of
 * ragged sizes (clientsFrom, padClients) whose data is declared private. Each round the server
 * Poisson-samples a cohort with secretRandom(), every sampled client computes the gradient of
 * its mean sigmoidCrossEntropy at the broadcast model, and dpMean clips each gradient to L2
 * norm C, sums them, adds N(0, (z C)^2) and divides by the EXPECTED cohort size q x clients.
 * An RdpAccountant steps once per round; the loop prints test accuracy and epsilon and stops
 * before epsilon would pass the target.
 *
 * The noise key is one secretKey() per run (node:crypto), a SERVER input, folded with the
 * round number inside the program: a fresh key per release (FT111 otherwise), none from a seed.
 *
 *   npm run build && node dist/examples/dp-fedsgd-logistic.js
 */
import { pathToFileURL } from "node:url";
import {
  atClients,
  atServer,
  broadcast,
  div,
  dpMean,
  f32,
  foldIn,
  grad,
  helper,
  i32,
  map,
  matmul,
  mul,
  program,
  RdpAccountant,
  secretKey,
  sigmoidCrossEntropy,
  sub,
  sum,
  useBackend,
  type Float,
} from "fedtensor";
import { type ClientDataset, clientsFrom, padClients, poissonSample, type RandomSource, Rng, secretRandom } from "fedtensor/lib";

export const FEATURES = 10;
export const CLIENTS = 50;
export const CLIP = 1;
export const NOISE_MULTIPLIER = 2;
export const SAMPLING_RATE = 0.3;
export const DELTA = 1e-5;
export const TARGET_EPSILON = 4;

/**
 * A client's mean binary cross-entropy over its real examples (padding has mask 0). Its
 * parameters carry no placement: called on members inside map, or on CLIENTS values, and a
 * SERVER model beside CLIENTS data is FT104 naming it (test/fixtures/type-errors/ft104-logistic-helper.ts).
 */
export const clientLoss = helper(
  "clientLoss",
  (w: Float<[typeof FEATURES, 1]>, x: Float<["N", typeof FEATURES]>, y: Float<["N", 1]>, mask: Float<["N"]>, count: Float<[]>) =>
    div(sum(mul(sigmoidCrossEntropy(matmul(x, w), y), mask)), count),
);

export const dpRound = program(
  {
    w: atServer(f32([FEATURES, 1])),
    key: atServer(i32([2])),
    round: atServer(i32([])),
    x: atClients(f32(["N", FEATURES]), { private: true }),
    y: atClients(f32(["N", 1]), { private: true }),
    mask: atClients(f32(["N"]), { private: true }),
    count: atClients(f32([]), { private: true }),
    lr: atServer(f32([])),
    expectedClients: atServer(f32([])),
  },
  ({ w, key, round, x, y, mask, count, lr, expectedClients }) => {
    const gradients = map((wm, xm, ym, mm, cm) => grad((v: typeof wm) => clientLoss(v, xm, ym, mm, cm))(wm), broadcast(w), x, y, mask, count);
    // The only way the clients' data reaches the SERVER: clipped, summed, noised, over m.
    const noisyMean = dpMean(gradients, { clip: CLIP, noiseMultiplier: NOISE_MULTIPLIER, key: foldIn(key, round), expectedClients });
    return sub(w, mul(lr, noisyMean));
  },
  { name: "dp_fedsgd_logistic_round" },
);

export interface BinaryTask {
  readonly truth: number[];
  readonly train: ClientDataset<"x" | "y">;
  readonly test: { readonly x: number[][]; readonly y: number[] };
}

/** Labels 1 where x . truth + N(0, 0.25) > 0: separable up to the label noise. Clients hold 5 to 80 examples. */
export function binaryTask(rng: Rng, testExamples = 2000): BinaryTask {
  const truth = Array.from({ length: FEATURES }, () => rng.normal());
  const example = (): [number[], number] => {
    const x = Array.from({ length: FEATURES }, () => rng.normal());
    return [x, x.reduce((s, v, i) => s + v * truth[i]!, 0) + 0.5 * rng.normal() > 0 ? 1 : 0];
  };
  const clients = Array.from({ length: CLIENTS }, () => {
    const rows = Array.from({ length: rng.int(5, 81) }, example);
    return { x: rows.map(([x]) => x), y: rows.map(([, label]) => [label]) };
  });
  const held = Array.from({ length: testExamples }, example);
  return { truth, train: clientsFrom(clients), test: { x: held.map(([x]) => x), y: held.map(([, label]) => label) } };
}

/** The fraction of examples on the side of the decision boundary w . x = 0 that their label says. */
export function accuracy(w: readonly number[], test: BinaryTask["test"]): number {
  const right = test.x.filter((x, i) => (x.reduce((s, v, j) => s + v * w[j]!, 0) > 0 ? 1 : 0) === test.y[i]).length;
  return right / test.x.length;
}

/** A round's cohort tensors. An empty Poisson sample is still a release, of the noise alone: one client whose mask is all 0 contributes a zero gradient. */
function cohortTensors(data: ClientDataset<"x" | "y">, cohort: Int32Array) {
  if (cohort.length > 0) return padClients(data, cohort);
  const one = padClients(data, [0]);
  return { ...one, mask: { shape: one.mask.shape, data: new Float32Array(one.mask.data.length) } };
}

export interface RoundReport {
  readonly round: number;
  readonly cohort: number;
  readonly accuracy: number;
  readonly epsilon: number;
}

export interface TrainOptions {
  readonly lr?: number;
  /** Who is sampled each round; the default is node:crypto, as amplification by sampling needs. */
  readonly random?: RandomSource;
  readonly onRound?: (report: RoundReport) => void;
}

/** Rounds of DP-FedSGD until the next round would spend more than TARGET_EPSILON at DELTA. */
export async function train(task: BinaryTask, options: TrainOptions = {}): Promise<{ w: number[]; rounds: number; epsilon: number }> {
  const { lr = 1, random = secretRandom(), onRound } = options;
  const key = secretKey();
  const accountant = new RdpAccountant();
  let w = new Array<number>(FEATURES).fill(0);
  // The accountant is cumulative, so peek at the next round's total on a copy of the steps taken.
  const next = () => new RdpAccountant().step(SAMPLING_RATE, NOISE_MULTIPLIER, accountant.steps + 1).epsilon(DELTA);
  while (next() <= TARGET_EPSILON) {
    const round = accountant.steps;
    const cohort = poissonSample(task.train.clientIds.length, SAMPLING_RATE, random);
    const { x, y, mask, count } = cohortTensors(task.train, cohort);
    const out = await dpRound.run({ w: { shape: [FEATURES, 1], data: Float32Array.from(w) }, key, round, x, y, mask, count, lr, expectedClients: SAMPLING_RATE * CLIENTS });
    w = Array.from(await out.data());
    out.dispose();
    accountant.step(SAMPLING_RATE, NOISE_MULTIPLIER);
    onRound?.({ round, cohort: cohort.length, accuracy: accuracy(w, task.test), epsilon: accountant.epsilon(DELTA) });
  }
  return { w, rounds: accountant.steps, epsilon: accountant.epsilon(DELTA) };
}

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`dpRound: ${dpRound.signature}`);
  for (const line of dpRound.privacy) console.log(`  ${line}`);
  const task = binaryTask(Rng.fromSeed(0));
  const { rounds, epsilon } = await train(task, {
    onRound: (r) => console.log(`round ${r.round}: ${r.cohort} clients, test accuracy ${(100 * r.accuracy).toFixed(1)}%, epsilon ${r.epsilon.toFixed(2)}`),
  });
  console.log(`stopped after ${rounds} rounds: (epsilon ${epsilon.toFixed(2)}, delta 1e-5), q = ${SAMPLING_RATE}, z = ${NOISE_MULTIPLIER}; one more would pass ${TARGET_EPSILON}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
