/**
 * Placement rules (SPEC section 3): the result types of the placement primitives, and for each
 * of FT101-FT106 and FT207 mistakes that must fail next to the corrected code that must pass.
 * The exact message texts are checked by test/type-errors.test.ts.
 */
import { expectError, expectType } from "tsd";
import {
  add,
  aggregate,
  atClients,
  atServer,
  broadcast,
  f32,
  layerNorm,
  map,
  matmul,
  mean,
  mul,
  reduceMax,
  reduceMean,
  reduceMin,
  reduceSum,
  reduceWeightedMean,
  sub,
  sum,
  take,
  zerosLike,
  type Tensor,
  type TensorSpec,
} from "../dist/src/index.js";
import { value, type F32, type I32 } from "./helpers.js";

declare const weights: F32<[784, 10], "server">;
declare const bias: F32<[10], "server">;
declare const learningRate: F32<[]>;
declare const images: F32<["B", 784], "clients">;
declare const exampleCounts: F32<[], "clients">;

/** Each client's mean pixel value: a `{f32[]}@CLIENTS` value to reduce. */
const clientMeans = map((x) => mean(x), images);
expectType<F32<[], "clients">>(clientMeans);

// ---- broadcast: SERVER to CLIENTS (FT101) -------------------------------------------------

expectType<F32<[784, 10], "clients-equal">>(broadcast(weights));
expectType<{ w: F32<[784, 10], "clients-equal">; b: F32<[10], "clients-equal"> }>(broadcast({ w: weights, b: bias }));
// A CLIENTS value is already at the clients.
expectError(broadcast(images));
// A local constant has no placement to copy from.
expectError(broadcast(learningRate));
// One leaf of the tree is at the clients.
expectError(broadcast({ w: weights, x: images }));

// ---- map: CLIENTS arguments only (FT102) --------------------------------------------------

expectType<F32<["B", 10], "clients">>(map((x, w) => matmul(x, w), images, broadcast(weights)));
// All arguments all-equal: the result is known equal too.
expectType<F32<[10], "clients-equal">>(map((w) => sum(w, 0), broadcast(weights)));
// The SERVER weights passed without broadcast.
expectError(map((x, w) => matmul(x, w), images, weights));
expectError(map((w) => sum(w, 0), weights));
// The SERVER weights read from the closure inside the per-client function.
expectError(map((x) => matmul(x, weights), images));
// A local constant has no members: it is read inside the function instead.
expectError(map((x, lr) => mul(x, lr), images, learningRate));
expectType<F32<["B", 784], "clients">>(map((x) => mul(x, learningRate), images));

// ---- reductions: CLIENTS to SERVER (FT103) ------------------------------------------------

expectType<F32<[], "server">>(reduceMean(clientMeans));
expectType<F32<[], "server">>(reduceSum(clientMeans));
expectType<F32<[], "server">>(reduceMax(clientMeans));
expectType<F32<[], "server">>(reduceMin(clientMeans));
expectType<F32<[784, 10], "server">>(reduceSum(broadcast(weights)));
expectType<{ loss: F32<[], "server">; w: F32<[784, 10], "server"> }>(reduceMean({ loss: clientMeans, w: broadcast(weights) }));
// Already at the SERVER.
expectError(reduceMean(weights));
expectError(reduceMax(reduceMean(clientMeans)));
// A local value has no members to combine.
expectError(reduceSum(learningRate));
// The weight of reduceWeightedMean must be at the clients too.
expectError(reduceWeightedMean(clientMeans, reduceSum(exampleCounts)));
expectError(reduceWeightedMean(reduceMean(clientMeans), exampleCounts));

// ---- aggregate: a generic reduction (FT103, FT105) ----------------------------------------

const pixelSums = {
  zero: () => zerosLike(value<F32<[784]>>()),
  accumulate: (acc: F32<[784], "member">, x: F32<["B", 784], "member">) => add(acc, sum(x, 0)),
  merge: (a: F32<[784], "member">, b: F32<[784], "member">) => add(a, b),
  report: (acc: F32<[784], "member">) => acc,
};
expectType<F32<[784], "server">>(aggregate(images, pixelSums));
expectType<F32<[], "server">>(aggregate(images, { ...pixelSums, report: (acc) => sum(acc) }));
expectError(aggregate(reduceSum(images), pixelSums));
// The accumulator is one client's member inside aggregate: there is nothing to reduce there.
expectError(aggregate(images, { ...pixelSums, report: (acc) => reduceSum(acc) }));
expectError(aggregate(images, { ...pixelSums, accumulate: (acc, x) => add(acc, reduceSum(sum(x, 0))) }));
// The accumulator starts from local constants (FT208), not from a SERVER or CLIENTS value.
expectError(aggregate(images, { ...pixelSums, zero: () => zerosLike(value<F32<[784], "server">>()) }));
expectError(aggregate(images, { ...pixelSums, zero: () => zerosLike(value<F32<[784], "clients">>()) }));
expectType<F32<[784], "server">>(aggregate(images, { ...pixelSums, zero: () => zerosLike(value<F32<[784], "local">>()) }));

// ---- operands at SERVER and CLIENTS together (FT104) --------------------------------------

const clientLogits = matmul(images, broadcast(weights));
expectType<F32<["B", 10], "clients">>(clientLogits);
expectType<F32<["B", 10], "clients">>(add(clientLogits, broadcast(bias)));
expectType<F32<[10], "server">>(sub(bias, reduceMean(map((l) => mean(l, 0), clientLogits))));
// A local constant takes the placement of the placed operand.
expectType<F32<[784, 10], "server">>(mul(weights, learningRate));
expectType<F32<[784, 10], "server">>(mul(weights, 0.5));
// The SERVER bias added to CLIENTS logits without broadcast.
expectError(add(clientLogits, bias));
// A SERVER update minus a CLIENTS value that was never reduced.
expectError(sub(bias, map((l) => mean(l, 0), clientLogits)));
// layerNorm of CLIENTS activations with a SERVER scale.
expectError(layerNorm(clientLogits, value<F32<[10], "server">>(), value<F32<[10], "clients-equal">>()));
// A SERVER table looked up by CLIENTS ids.
expectError(take(weights, value<I32<[3], "clients">>()));
expectType<F32<[3, 10], "clients">>(take(broadcast(weights), value<I32<[3], "clients">>()));
// matmul of CLIENTS images with the SERVER weights.
expectError(matmul(images, weights));

// ---- placement primitives inside map (FT105) ----------------------------------------------

// Reduce what map() returns; broadcast before map() and pass the result in.
expectType<F32<[], "server">>(reduceMean(map((x) => mean(x), images)));
expectType<F32<[], "server">>(reduceSum(map((x, w) => sum(matmul(x, w)), images, broadcast(weights))));
expectError(map((x) => reduceMean(x), images));
expectError(map((x, w) => sum(matmul(x, broadcast(w))), images, broadcast(weights)));
// broadcast() of a captured SERVER value inside the function is the same mistake.
expectError(map((x) => sum(matmul(x, broadcast(weights))), images));
expectError(map((w) => broadcast(w), broadcast(weights)));

// ---- nested placement (FT106) -------------------------------------------------------------

expectType<TensorSpec<[10], "float32", "server">>(atServer(f32([10])));
expectType<{ w: TensorSpec<[784, 10], "float32", "clients">; b: TensorSpec<[10], "float32", "clients"> }>(
  atClients({ w: f32([784, 10]), b: f32([10]) }),
);
expectError(atServer(atClients(f32([10]))));
expectError(atClients({ w: atServer(f32([784, 10])), b: f32([10]) }));
// A SERVER value returned from the per-client function.
expectError(map((x) => weights, images));
// A CLIENTS value read from the closure inside the per-client function.
expectError(map((x) => sub(x, images), images));

// ---- reduceWeightedMean's weight: one f32 scalar per client (FT207) -----------------------

expectType<F32<["B", 784], "server">>(reduceWeightedMean(images, exampleCounts));
expectType<F32<[], "server">>(reduceWeightedMean(clientMeans, map((x) => sum(x), images)));
// One weight per example, not per client.
expectError(reduceWeightedMean(clientMeans, map((x) => sum(x, 1), images)));
// Example counts as int32: cast them first.
expectError(reduceWeightedMean(clientMeans, value<I32<[], "clients">>()));

// ---- one mistake, one diagnostic: a failed primitive has the type the user meant ----------

// @ts-expect-error FT101: the images are at the CLIENTS already; the result is as if broadcast.
const broadcastImages = broadcast(images);
expectType<F32<["B", 784], "clients-equal">>(broadcastImages);
// @ts-expect-error FT103: reduceMean() of the SERVER tree; its leaves are still there to read.
const serverModel = reduceMean({ w: weights, b: bias });
expectType<F32<[784, 10], "server">>(serverModel.w);
// @ts-expect-error FT102: map() over the SERVER weights. tsc then infers nothing from the
// function, so the result is `any`, which nothing after it reports on.
const perClient = map((w) => sum(w, 0), weights);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
expectType<any>(reduceMean(perClient));
// @ts-expect-error FT105: inside map()'s function the member stays a member.
expectType<F32<[], "clients">>(map((x) => mean(reduceMean(x)), images));
// A value whose placement is not known statically fails closed (FT115: annotate it); its type is still moved.
// @ts-expect-error FT115: reduceMean() takes f32[3], whose placement tsc cannot know
expectType<Tensor<[3], "float32", "server">>(reduceMean(value<Tensor<[3], "float32">>()));
