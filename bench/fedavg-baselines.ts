/**
 * Hand-written TensorFlow.js FedAvg rounds for the 2NN, the baselines of bench/fedavg-round.ts.
 *
 * Both compute what the DSL's FedAvg computes: the new server parameters and the cohort's
 * mean training loss. `bestRound` is the fastest plain form we know on tfjs wasm: a client at
 * a time, the backward pass written out with explicit 2-D transposes (wasm's fast path is
 * plain 2-D matMul), every step in tf.tidy, and the data split into batches by reading it once
 * (tf.unstack copies the whole input per slice on wasm). `naiveRound` is what most people
 * write first: tf.unstack and tf.valueAndGrads per step.
 */
import * as tf from "@tensorflow/tfjs";

export type Params = Record<"w1" | "b1" | "w2" | "b2" | "w3" | "b3", tf.Tensor>;
export interface Cohort {
  /** [C, S, B, 784] */
  readonly x: tf.Tensor;
  /** [C, S, B] int32 */
  readonly y: tf.Tensor;
  /** [C] example counts */
  readonly count: tf.Tensor;
}

const keys = ["w1", "b1", "w2", "b2", "w3", "b3"] as const;

function forward(p: Params, x: tf.Tensor) {
  const z1 = tf.add(tf.matMul(x as tf.Tensor2D, p.w1 as tf.Tensor2D), p.b1);
  const h1 = tf.relu(z1);
  const z2 = tf.add(tf.matMul(h1 as tf.Tensor2D, p.w2 as tf.Tensor2D), p.b2);
  const h2 = tf.relu(z2);
  const logits = tf.add(tf.matMul(h2 as tf.Tensor2D, p.w3 as tf.Tensor2D), p.b3);
  return { z1, h1, z2, h2, logits };
}

interface Step {
  readonly params: Params;
  /** The batch's summed cross-entropy. */
  readonly lossSum: tf.Scalar;
}

/** One SGD step with the backward pass written by hand. */
function handStep(p: Params, x: tf.Tensor2D, labels: tf.Tensor2D, lr: number): Step {
  return tf.tidy(() => {
    const { z1, h1, z2, h2, logits } = forward(p, x);
    const logp = tf.logSoftmax(logits);
    const lossSum = tf.neg(tf.sum(tf.mul(labels, logp))) as tf.Scalar;
    const dz3 = tf.div(tf.sub(tf.exp(logp), labels), x.shape[0]) as tf.Tensor2D;
    const dw3 = tf.matMul(tf.transpose(h2) as tf.Tensor2D, dz3);
    const dh2 = tf.matMul(dz3, tf.transpose(p.w3) as tf.Tensor2D);
    const dz2 = tf.mul(dh2, tf.step(z2)) as tf.Tensor2D;
    const dw2 = tf.matMul(tf.transpose(h1) as tf.Tensor2D, dz2);
    const dh1 = tf.matMul(dz2, tf.transpose(p.w2) as tf.Tensor2D);
    const dz1 = tf.mul(dh1, tf.step(z1)) as tf.Tensor2D;
    const dw1 = tf.matMul(tf.transpose(x) as tf.Tensor2D, dz1);
    const g: Params = { w1: dw1, b1: tf.sum(dz1, 0), w2: dw2, b2: tf.sum(dz2, 0), w3: dw3, b3: tf.sum(dz3, 0) };
    return { params: Object.fromEntries(keys.map((k) => [k, tf.sub(p[k], tf.mul(g[k], lr))])) as Params, lossSum };
  });
}

/** One SGD step through TensorFlow.js's own autodiff. */
function gradsStep(p: Params, x: tf.Tensor2D, labels: tf.Tensor2D, lr: number): Step {
  return tf.tidy(() => {
    const loss = (...ws: tf.Tensor[]) => {
      const q = Object.fromEntries(keys.map((k, i) => [k, ws[i]!])) as Params;
      return tf.losses.softmaxCrossEntropy(labels, forward(q, x).logits) as tf.Scalar;
    };
    const { value, grads } = tf.valueAndGrads(loss)(keys.map((k) => p[k]));
    const params = Object.fromEntries(keys.map((k, i) => [k, tf.sub(p[k], tf.mul(grads[i]!, lr))])) as Params;
    return { params, lossSum: tf.mul(value, x.shape[0]) as tf.Scalar };
  });
}

export interface RoundResult {
  readonly params: Params;
  /** Mean training loss over the cohort's examples. */
  readonly loss: tf.Scalar;
}

/** tfjs's own unstack. */
const plainSplit = (x: tf.Tensor): tf.Tensor[] => tf.unstack(x);
/** Splits along axis 0 by reading the data once and uploading each part (fast on wasm). */
function readOnceSplit(x: tf.Tensor): tf.Tensor[] {
  const [count, ...member] = x.shape;
  const size = member.reduce((a, b) => a * b, 1);
  const data = x.dataSync();
  return Array.from({ length: count! }, (_, i) => tf.tensor(data.subarray(i * size, (i + 1) * size) as Float32Array, member, x.dtype));
}

/** A FedAvg round with the given local step: clients one after another, then the weighted mean. */
function round(step: typeof handStep, split: (x: tf.Tensor) => tf.Tensor[], params: Params, cohort: Cohort, lr: number): RoundResult {
  const clientsX = split(cohort.x);
  const clientsY = split(cohort.y);
  const counts = Array.from(cohort.count.dataSync());
  const total = counts.reduce((a, b) => a + b, 0);
  let sum: Params | undefined;
  let lossSum: tf.Scalar = tf.scalar(0);
  clientsX.forEach((cx, c) => {
    const batchesX = split(cx) as tf.Tensor2D[];
    const labels = split(clientsY[c]!);
    const batchesY = tf.tidy(() => labels.map((yb) => tf.oneHot(yb as tf.Tensor1D, 10).toFloat() as tf.Tensor2D));
    tf.dispose(labels);
    let p = params;
    batchesX.forEach((xb, s) => {
      const next = step(p, xb, batchesY[s]!, lr);
      if (p !== params) tf.dispose(Object.values(p));
      p = next.params;
      const total = tf.add(lossSum, next.lossSum) as tf.Scalar;
      tf.dispose([lossSum, next.lossSum]);
      lossSum = total;
    });
    const weighted = tf.tidy(() => Object.fromEntries(keys.map((k) => [k, tf.mul(p[k], counts[c]! / total)])) as Params);
    if (p !== params) tf.dispose(Object.values(p));
    if (sum === undefined) sum = weighted;
    else {
      const acc = sum;
      sum = tf.tidy(() => Object.fromEntries(keys.map((k) => [k, tf.add(acc[k], weighted[k])])) as Params);
      tf.dispose([...Object.values(acc), ...Object.values(weighted)]);
    }
    tf.dispose([...batchesX, ...batchesY]);
  });
  tf.dispose([...clientsX, ...clientsY]);
  const loss = tf.div(lossSum, total) as tf.Scalar;
  lossSum.dispose();
  return { params: sum!, loss };
}

export const bestRound = (params: Params, cohort: Cohort, lr: number) => round(handStep, readOnceSplit, params, cohort, lr);
export const naiveRound = (params: Params, cohort: Cohort, lr: number) => round(gradsStep, plainSplit, params, cohort, lr);
