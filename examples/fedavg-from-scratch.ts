/**
 * FedAvg written from FedTensor's primitives, for logistic regression on MNIST: the types
 * check every placement and shape as you write (try passing `params` to map() without
 * broadcast), and the program runs on TensorFlow.js.
 *
 *   npm run build && node dist/examples/fedavg-from-scratch.js
 */
import { pathToFileURL } from "node:url";
import * as tf from "@tensorflow/tfjs";
import {
  add,
  atClients,
  atServer,
  broadcast,
  div,
  f32,
  grad,
  i32,
  map,
  matmul,
  maximum,
  mul,
  oneHot,
  program,
  reduceWeightedMean,
  scan,
  softmaxCrossEntropy,
  sub,
  sum,
  useBackend,
  type Tensor,
} from "fedtensor";
import { batchEvaluation, evaluationProgram, federate, loadMnist, logistic, partitionIid, Rng, roundCohort } from "fedtensor/lib";

type Params = { w: Tensor<[784, 10], "float32", "member">; b: Tensor<[10], "float32", "member"> };
type Batch = { x: Tensor<["B", 784], "float32", "member">; y: Tensor<["B"], "int32", "member">; mask: Tensor<["B"], "float32", "member"> };

/** Mean cross-entropy over a batch's real examples (padding has mask 0). */
function batchLoss(p: Params, batch: Batch) {
  const logits = add(matmul(batch.x, p.w), p.b);
  const losses = softmaxCrossEntropy(logits, oneHot(batch.y, 10));
  return div(sum(mul(losses, batch.mask)), maximum(sum(batch.mask), 1));
}

export const fedAvgRound = program(
  {
    params: atServer({ w: f32([784, 10]), b: f32([10]) }),
    x: atClients(f32(["S", "B", 784])),
    y: atClients(i32(["S", "B"])),
    mask: atClients(f32(["S", "B"])),
    count: atClients(f32([])),
  },
  ({ params, x, y, mask, count }) => {
    // Each client: SGD over its batches from the server model; the result is its model delta.
    const deltas = map(
      (w, xs, ys, ms) => {
        const [trained] = scan(w, { x: xs, y: ys, mask: ms }, (p, batch) => [sub(p, mul(grad(batchLoss)(p, batch), 0.1)), undefined] as const);
        return sub(trained, w);
      },
      broadcast(params),
      x,
      y,
      mask,
    );
    // The server: the example-weighted mean of the deltas.
    return add(params, reduceWeightedMean(deltas, count));
  },
  { name: "fedavg_from_scratch" },
);

async function main(): Promise<void> {
  console.log(`fedAvgRound: ${fedAvgRound.signature}`);
  console.log(`backend: ${await useBackend()}`);
  const rng = Rng.fromSeed(0);
  const train = loadMnist("train");
  const test = loadMnist("test");
  const data = federate(train, test, partitionIid(train.y.length, 100, rng.fork("partition")));
  const evaluate = evaluationProgram(logistic);
  const testBatches = batchEvaluation(test, 500);
  const flat = (t: { shape: number[]; data: Float32Array | Int32Array }, lead: number) => ({ shape: [...t.shape.slice(0, lead), 784], data: t.data });
  let params = { w: tf.zeros([784, 10]), b: tf.zeros([10]) };
  for (let round = 1; round <= 5; round++) {
    const cohort = roundCohort(data, { rng, round, clientsPerRound: 10, batchSize: 10 });
    const next = await fedAvgRound.run({ params, x: flat(cohort.x, 3), y: cohort.y, mask: cohort.mask, count: cohort.count });
    tf.dispose(Object.values(params));
    params = next;
    const { accuracy, loss } = await evaluate.run({ params, x: flat(testBatches.x, 2), y: testBatches.y, mask: testBatches.mask });
    console.log(`round ${round}: test accuracy ${((await accuracy.data())[0]! * 100).toFixed(2)}%`);
    tf.dispose([accuracy, loss]);
  }
}

// Run when executed, not when imported (by `fedtensor ir`, say).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
