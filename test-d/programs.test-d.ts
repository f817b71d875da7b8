/**
 * Whole programs: specs declare the inputs once (f32, i32, bool, atServer, atClients), the body
 * is typed by inference, and a mistake anywhere in a body fails the program. Each failing
 * program is a near copy of a passing one.
 */
import { expectError, expectType } from "tsd";
import {
  add,
  aggregate,
  argmax,
  atClients,
  atServer,
  bool,
  broadcast,
  cast,
  equal,
  f32,
  fori,
  grad,
  greater,
  i32,
  map,
  matmul,
  mean,
  mul,
  oneHot,
  program,
  reduceMean,
  reduceSum,
  reduceWeightedMean,
  reshape,
  signatureOf,
  sparseSoftmaxCrossEntropy,
  sub,
  sum,
  valueAndGrad,
  where,
  zerosLike,
  type Program,
  type ProgramIR,
  type TensorSpec,
} from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

// ---- specs --------------------------------------------------------------------------------

expectType<TensorSpec<["B", 784], "float32", "local">>(f32(["B", 784]));
expectType<TensorSpec<[], "int32", "local">>(i32([]));
// null: a dim known only at run time.
expectType<TensorSpec<[number, 3], "bool", "local">>(bool([null, 3]));
expectType<TensorSpec<["B"], "int32", "clients">>(atClients(i32(["B"])));
expectType<{ w: TensorSpec<[784, 10], "float32", "server">; b: TensorSpec<[10], "float32", "server"> }>(
  atServer({ w: f32([784, 10]), b: f32([10]) }),
);
expectType<[TensorSpec<[4], "float32", "clients">, TensorSpec<[], "bool", "clients">]>(atClients([f32([4]), bool([])]));

// ---- FedAvg: one round of example-weighted federated averaging ----------------------------

const fedAvgInputs = {
  params: atServer({ w: f32([784, 10]), b: f32([10]) }),
  images: atClients(f32(["B", 784])),
  labels: atClients(i32(["B"])),
  examples: atClients(f32([])),
};
type FedAvgInputs = typeof fedAvgInputs;
type Params<P extends "server" | "member"> = { w: F32<[784, 10], P>; b: F32<[10], P> };

/** Mean cross-entropy of a linear model on one client's batch. */
const batchLoss = (p: Params<"member">, x: F32<["B", 784], "member">, y: I32<["B"], "member">) =>
  mean(sparseSoftmaxCrossEntropy(add(matmul(x, p.w), p.b), y));

const fedAvg = program(fedAvgInputs, ({ params, images, labels, examples }) => {
  expectType<Params<"server">>(params);
  expectType<F32<["B", 784], "clients">>(images);
  const trained = map(
    (p, x, y) => fori(5, p, (i, q) => sub(q, mul(q, batchLoss(q, x, y)))),
    broadcast(params),
    images,
    labels,
  );
  expectType<{ w: F32<[784, 10], "clients">; b: F32<[10], "clients"> }>(trained);
  const losses = map((p, x, y) => batchLoss(p, x, y), broadcast(params), images, labels);
  return { params: reduceWeightedMean(trained, examples), loss: reduceMean(losses) };
});
expectType<Program<FedAvgInputs, { params: Params<"server">; loss: F32<[], "server"> }>>(fedAvg);
expectType<string>(fedAvg.signature);
expectType<string>(signatureOf(fedAvg.ir));
expectType<ProgramIR>(fedAvg.ir);

// The same round with one mistake each.
expectError(
  program(fedAvgInputs, ({ params, images, labels }) =>
    // FT102: the SERVER parameters passed to map without broadcast.
    reduceMean(map((p, x, y) => batchLoss(p, x, y), params, images, labels)),
  ),
);
expectError(
  program(fedAvgInputs, ({ params, images, labels }) =>
    // FT105: averaging inside the per-client function.
    map((p, x, y) => reduceMean(batchLoss(p, x, y)), broadcast(params), images, labels),
  ),
);
expectError(
  program(fedAvgInputs, ({ params, images, labels }) => {
    const losses = map((p, x, y) => batchLoss(p, x, y), broadcast(params), images, labels);
    // FT104: a SERVER value minus a CLIENTS value.
    return sub(params.b, losses);
  }),
);
expectError(
  program(fedAvgInputs, ({ params, images, labels }) =>
    // FT202: the weights used untransposed on the left.
    map((p, x) => matmul(p.w, x), broadcast(params), images, labels),
  ),
);
expectError(
  program(fedAvgInputs, ({ params, images, labels }) =>
    // FT205: labels compared with float predictions.
    map((p, x, y) => equal(matmul(x, p.w), y), broadcast(params), images, labels),
  ),
);

// ---- federated analytics: how many readings pass a threshold set by the server -------------

const analyticsInputs = { readings: atClients(f32(["N"])), valid: atClients(bool(["N"])), threshold: atServer(f32([])) };
const aboveThreshold = program(analyticsInputs, ({ readings, valid, threshold }) => {
  const perClient = map(
    (r, v, t) => sum(cast(where(v, greater(r, t), v), "float32")),
    readings,
    valid,
    broadcast(threshold),
  );
  return { total: reduceSum(perClient), mean: reduceMean(perClient) };
});
expectType<Program<typeof analyticsInputs, { total: F32<[], "server">; mean: F32<[], "server"> }>>(aboveThreshold);
expectError(
  program(analyticsInputs, ({ readings, threshold }) =>
    // FT102: the threshold read inside map from the SERVER.
    reduceSum(map((r) => sum(cast(greater(r, threshold), "float32")), readings)),
  ),
);
expectError(
  program(analyticsInputs, ({ readings, threshold }) =>
    // FT205: a bool mask summed without a cast.
    reduceSum(map((r, t) => sum(greater(r, t)), readings, broadcast(threshold))),
  ),
);

// ---- federated evaluation: accuracy, with a histogram of predictions -----------------------

const evalInputs = {
  weights: atServer(f32([784, 10])),
  images: atClients(f32(["B", 28, 28])),
  labels: atClients(i32(["B"])),
};
/** The empty histogram, a local constant. */
declare const noPredictions: F32<[10]>;
const evaluate = program(evalInputs, ({ weights, images, labels }) => {
  const predictions = map(
    (x, w) => argmax(matmul(reshape(x, [-1, 784]), w)),
    images,
    broadcast(weights),
  );
  expectType<I32<["B"], "clients">>(predictions);
  const correct = map((p, y) => cast(equal(p, y), "float32"), predictions, labels);
  const histogram = aggregate(predictions, {
    zero: () => zerosLike(noPredictions),
    accumulate: (counts, p) => add(counts, sum(oneHot(p, 10), 0)),
    merge: (a, b) => add(a, b),
    report: (counts) => counts,
  });
  return { accuracy: reduceMean(map((c) => mean(c), correct)), histogram };
});
expectType<
  Program<typeof evalInputs, { accuracy: F32<[], "server">; histogram: F32<[10], "server"> }>
>(evaluate);
expectError(
  program(evalInputs, ({ weights, images }) =>
    // FT203: 28x28 images flattened to the wrong width.
    map((x, w) => matmul(reshape(x, ["B", 728]), w), images, broadcast(weights)),
  ),
);
expectError(
  program(evalInputs, ({ weights, images, labels }) =>
    // FT201: per-example labels compared with per-class scores.
    map((x, w, y) => equal(matmul(reshape(x, [-1, 784]), w), cast(y, "float32")), images, broadcast(weights), labels),
  ),
);
// FT106: a spec placed twice.
expectError(program({ x: atServer(atClients(f32([3]))) }, ({ x }) => x));

// A boolean input at the clients: how many clients flag no example at all.
expectType<Program<{ readonly flags: TensorSpec<["B"], "bool", "clients"> }, I32<[], "server">>>(
  program({ flags: atClients(bool(["B"])) }, ({ flags }) =>
    reduceSum(map((f) => cast(equal(sum(cast(f, "int32")), 0), "int32"), flags)),
  ),
);

// ---- gradients: FedSGD with per-client gradients (FT209 is the loss that is not a scalar) ----

const fedSgd = program(fedAvgInputs, ({ params, images, labels }) => {
  const gradients = map((p, x, y) => grad(batchLoss)(p, x, y), broadcast(params), images, labels);
  expectType<{ w: F32<[784, 10], "clients">; b: F32<[10], "clients"> }>(gradients);
  return sub(params, mul(reduceMean(gradients), 0.1));
});
expectType<Program<FedAvgInputs, Params<"server">>>(fedSgd);
expectType<
  (p: Params<"member">, x: F32<["B", 784], "member">, y: I32<["B"], "member">) => [F32<[], "member">, Params<"member">]
>(valueAndGrad(batchLoss));
// Per-example losses, not their mean.
expectError(
  grad((p: Params<"member">, x: F32<["B", 784], "member">, y: I32<["B"], "member">) =>
    sparseSoftmaxCrossEntropy(add(matmul(x, p.w), p.b), y),
  ),
);
// The logits themselves.
expectError(valueAndGrad((p: Params<"member">, x: F32<["B", 784], "member">) => matmul(x, p.w)));
