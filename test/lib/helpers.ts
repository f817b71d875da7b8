/**
 * Shared pieces of the algorithm-library tests: a tiny softmax regression, a small linearly
 * separable federated problem as padded cohort batches, padding with all-masked batches,
 * reading program outputs back as plain numbers (disposing the tensors), and a one-parameter
 * model with float64 reference computations for the hand-computed cases.
 */
import * as tf from "@tensorflow/tfjs";
import { add, f32, matmul, mul } from "../../src/index.js";
import type { CohortBatches } from "../../src/lib/data/federated.js";
import { defineModel, type HostParam } from "../../src/lib/models/model.js";
import { Rng } from "../../src/lib/random.js";

const tinySpecs = { w: f32([2, 2]), b: f32([2]) };
export type TinyParams = typeof tinySpecs;

/** Softmax regression on 2 features and 2 classes, starting from zeros. */
export const tiny = defineModel<TinyParams, [2], 2>({
  name: "tiny",
  params: tinySpecs,
  inputShape: [2],
  classes: 2,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: () => ({ w: host([2, 2], [0, 0, 0, 0]), b: host([2], [0, 0]) }),
});

export function host(shape: number[], values: readonly number[]): HostParam {
  return { shape, data: Float32Array.from(values) };
}

/** A labelled example of the two-feature test problems. */
export interface Example {
  readonly features: readonly [number, number];
  readonly label: number;
}

/**
 * Cohort batches from each client's batches of examples: batches padded with masked slots to
 * `batchSize`, clients padded with all-masked batches to the most batches; count = examples.
 */
function cohortOf(clients: readonly (readonly (readonly Example[])[])[], batchSize: number): CohortBatches<Float32Array> {
  const steps = Math.max(...clients.map((batches) => batches.length));
  const shape = [clients.length, steps, batchSize];
  const x = new Float32Array(clients.length * steps * batchSize * 2);
  const y = new Int32Array(clients.length * steps * batchSize);
  const mask = new Float32Array(clients.length * steps * batchSize);
  clients.forEach((batches, c) =>
    batches.forEach((examples, s) =>
      examples.forEach(({ features, label }, b) => {
        const slot = (c * steps + s) * batchSize + b;
        x.set(features, slot * 2);
        y[slot] = label;
        mask[slot] = 1;
      }),
    ),
  );
  return {
    x: { shape: [...shape, 2], data: x },
    y: { shape, data: y },
    mask: { shape, data: mask },
    count: { shape: [clients.length], data: Float32Array.from(clients, (batches) => batches.flat().length) },
    clients: Int32Array.from(clients, (_, i) => i),
  };
}

const MARGIN = 0.5;

/**
 * A cohort on a separable problem: label 1 when x0 + x1 > 0, no point within MARGIN of the
 * boundary. Client i holds `examples[i]` points (drawn around a centre of its own on the
 * boundary, so clients differ), batched by `batchSize`.
 */
export function separableCohort(examples: readonly number[], batchSize: number, seed = 1): CohortBatches<Float32Array> {
  const rng = Rng.fromSeed(seed);
  const clients = examples.map((count, client) => {
    const shift = client - (examples.length - 1) / 2;
    const points = Array.from({ length: count }, (): Example => {
      let [a, b] = [0, 0];
      while (Math.abs(a + b) < MARGIN) [a, b] = [rng.normal(shift, 1), rng.normal(-shift, 1)];
      return { features: [a, b], label: a + b > 0 ? 1 : 0 };
    });
    return Array.from({ length: Math.ceil(count / batchSize) }, (_, s) => points.slice(s * batchSize, (s + 1) * batchSize));
  });
  return cohortOf(clients, batchSize);
}

/** The same cohort with `extra` all-masked batches appended to every client's batches. */
export function withPaddingBatches<B extends CohortBatches<Float32Array | Int32Array>>(cohort: B, extra: number): B {
  const pad = <D extends Float32Array | Int32Array>(t: { shape: number[]; data: D }) => {
    const [clients, steps, ...rest] = t.shape as [number, number, ...number[]];
    const perStep = rest.reduce((a, b) => a * b, 1);
    const data = new (t.data.constructor as new (n: number) => D)(clients * (steps + extra) * perStep);
    for (let c = 0; c < clients; c++) data.set(t.data.subarray(c * steps * perStep, (c + 1) * steps * perStep), c * (steps + extra) * perStep);
    return { shape: [clients, steps + extra, ...rest], data };
  };
  return { ...cohort, x: pad(cohort.x), y: pad(cohort.y), mask: pad(cohort.mask) };
}

/** The cohort's batches as a round program's inputs (without the cohort's client positions). */
export function batchInputs(cohort: CohortBatches<Float32Array | Int32Array>) {
  return { x: cohort.x, y: cohort.y, mask: cohort.mask, count: cohort.count };
}

type Numbers = number | Numbers[];
/** A tree of tensors as nested arrays of numbers; the tensors are disposed. */
export async function read<T>(tree: T): Promise<ReadTree<T>> {
  if (tree instanceof tf.Tensor) {
    const value = (await tree.array()) as Numbers;
    tree.dispose();
    return value as ReadTree<T>;
  }
  const entries = await Promise.all(Object.entries(tree as object).map(async ([k, v]) => [k, await read(v)] as const));
  return Object.fromEntries(entries) as ReadTree<T>;
}
export type ReadTree<T> = T extends tf.Tensor ? Numbers : { [K in keyof T]: ReadTree<T[K]> };


const oneParamSpecs = { w: f32([1]) };
/**
 * A one-parameter model for hand computations: logits = w * x, with features x = [0, a], so
 * p(class 1) = sigmoid(w a) and the gradient of the cross-entropy is (sigmoid(w a) - y) a.
 */
export const oneParam = defineModel<typeof oneParamSpecs, [2], 2>({
  name: "one_param",
  params: oneParamSpecs,
  inputShape: [2],
  classes: 2,
  logits: (p, x) => mul(x, p.w),
  init: () => ({ w: host([1], [0]) }),
});

/** A labelled point of the one-parameter model: feature a, label y. */
export interface Point {
  readonly a: number;
  readonly y: 0 | 1;
}

/** The mean gradient of the one-parameter model's loss over points, in float64. */
export function oneParamGradient(w: number, points: readonly Point[]): number {
  const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
  return points.reduce((sum, { a, y }) => sum + (sigmoid(w * a) - y) * a, 0) / points.length;
}

/** Cohort batches for the one-parameter model: clients[i] lists client i's batches of points. */
export function pointCohort(clients: readonly (readonly (readonly Point[])[])[]): CohortBatches<Float32Array> {
  const batchSize = Math.max(...clients.flatMap((batches) => batches.map((b) => b.length)));
  return cohortOf(clients.map((batches) => batches.map((points) => points.map(({ a, y }) => ({ features: [0, a], label: y })))), batchSize);
}

/** Local SGD of the one-parameter model in float64: for each non-empty batch, w -= lr * adjust(gradient, w). */
export function oneParamLocalSgd(w: number, batches: readonly (readonly Point[])[], lr: number, adjust = (g: number, _w: number) => g): number {
  for (const batch of batches) if (batch.length > 0) w -= lr * adjust(oneParamGradient(w, batch), w);
  return w;
}

/** Two clients' batches for the one-parameter hand computations (the second has two local steps). */
export const twoClients: readonly (readonly (readonly Point[])[])[] = [
  [[{ a: 1, y: 1 }, { a: -2, y: 1 }]],
  [[{ a: 0.5, y: 0 }], [{ a: 1.5, y: 1 }, { a: -1, y: 0 }]],
];
