/**
 * The result type (shape, dtype and placement) of every tensor operation that src/index.ts
 * exports. Operations compute where their operands live, so most operands here are placed;
 * the failing cases of each rule are in the topic files (shapes, dtypes, placement, trees).
 */
import { expectType } from "tsd";
import {
  abs,
  add,
  argmax,
  argsort,
  cast,
  cumsum,
  clip,
  concat,
  conv2d,
  div,
  equal,
  exp,
  expandDims,
  greater,
  greaterEqual,
  less,
  lessEqual,
  log,
  logicalAnd,
  logicalNot,
  logicalOr,
  groupNorm,
  layerNorm,
  logSoftmax,
  logsumexp,
  matmul,
  max,
  maximum,
  maxPool2d,
  mean,
  meanSquaredError,
  min,
  minimum,
  mul,
  neg,
  notEqual,
  oneHot,
  pow,
  relu,
  reshape,
  sigmoid,
  sign,
  slice,
  sort,
  softmax,
  softmaxCrossEntropy,
  sparseSoftmaxCrossEntropy,
  sqrt,
  stack,
  stopGradient,
  sub,
  sum,
  take,
  tanh,
  topk,
  transpose,
  where,
  zerosLike,
} from "../dist/src/index.js";
import { value, type Bool, type F32, type I32 } from "./helpers.js";

declare const logits: F32<["B", 10], "clients">;
declare const bias: F32<[10], "clients-equal">;
declare const labels: I32<["B"], "clients">;
declare const counts: I32<["B", 10], "clients">;
declare const mask: Bool<["B", 10], "clients">;
declare const scores: F32<[3, 4]>;

// ---- binary elementwise: numeric (f32 or i32, result as the operands) ---------------------

expectType<F32<["B", 10], "clients">>(add(logits, bias));
expectType<F32<["B", 10], "clients">>(sub(logits, 1));
expectType<F32<["B", 10], "clients">>(mul(2, logits));
expectType<F32<["B", 10], "clients">>(maximum(logits, 0));
expectType<F32<["B", 10], "clients">>(minimum(logits, bias));
expectType<I32<["B", 10], "clients">>(add(counts, 1));
expectType<I32<["B", 10], "clients">>(mul(counts, counts));
// Two plain numbers make a local f32 scalar.
expectType<F32<[]>>(add(1, 2));

// ---- binary elementwise: float only -------------------------------------------------------

expectType<F32<["B", 10], "clients">>(div(logits, 255));
expectType<F32<["B", 10], "clients">>(pow(logits, 2));

// ---- comparisons and logic, to bool -------------------------------------------------------

expectType<Bool<["B", 10], "clients">>(less(logits, 0));
expectType<Bool<["B", 10], "clients">>(lessEqual(counts, 3));
expectType<Bool<["B", 10], "clients">>(greater(logits, bias));
expectType<Bool<["B", 10], "clients">>(greaterEqual(counts, counts));
expectType<Bool<["B", 10], "clients">>(equal(mask, mask));
expectType<Bool<["B", 10], "clients">>(notEqual(counts, 0));
expectType<Bool<["B", 10], "clients">>(logicalAnd(mask, less(logits, 1)));
expectType<Bool<["B", 10], "clients">>(logicalOr(mask, mask));
expectType<Bool<["B", 10], "clients">>(logicalNot(mask));

// ---- unary elementwise --------------------------------------------------------------------

expectType<F32<["B", 10], "clients">>(neg(logits));
expectType<I32<["B", 10], "clients">>(neg(counts));
expectType<I32<["B", 10], "clients">>(abs(counts));
expectType<F32<["B", 10], "clients">>(sign(logits));
expectType<F32<["B", 10], "clients">>(exp(logits));
expectType<F32<["B", 10], "clients">>(log(logits));
expectType<F32<["B", 10], "clients">>(sqrt(logits));
expectType<F32<["B", 10], "clients">>(relu(logits));
expectType<F32<["B", 10], "clients">>(sigmoid(logits));
expectType<F32<["B", 10], "clients">>(tanh(logits));
expectType<Bool<["B", 10], "clients">>(stopGradient(mask));
// Unary functions map over trees.
expectType<{ w: F32<[3, 4]>; b: F32<[10], "clients-equal"> }>(relu({ w: scores, b: bias }));

// ---- linear algebra and layout ------------------------------------------------------------

expectType<F32<["B", 4], "clients">>(matmul(logits, value<F32<[10, 4], "clients-equal">>()));
expectType<F32<["B"], "clients">>(matmul(logits, bias));
expectType<F32<[10, "B"], "clients">>(transpose(logits));
expectType<F32<[4, 3, 2]>>(transpose(value<F32<[2, 3, 4]>>()));
expectType<F32<[3, 2, 4]>>(transpose(value<F32<[2, 3, 4]>>(), [1, 0, 2]));
expectType<F32<["B", 2, 5], "clients">>(reshape(logits, ["B", 2, 5]));
expectType<F32<["B", 2, 5], "clients">>(reshape(logits, [-1, 2, 5]));
expectType<F32<[1, "B", 10], "clients">>(expandDims(logits, 0));
expectType<F32<["B", 10, 1], "clients">>(expandDims(logits, -1));
expectType<F32<["B", 20], "clients">>(concat([logits, logits], 1));
expectType<F32<[2, "B", 10], "clients">>(stack([logits, logits]));
expectType<F32<[2, 3]>>(slice(scores, [1, 0], [2, 3]));
// size -1 takes the rest of the axis.
expectType<F32<[2, 2]>>(slice(scores, [1, 2], [-1, -1]));
expectType<F32<[3, 4]>>(slice(value<F32<[1000000000, 4]>>(), [999999997, 0], [-1, 4]));
// A named dim's bounds are checked at run time.
expectType<F32<[2, 4]>>(slice(value<F32<["B", 4]>>(), [7, 0], [2, 4]));

// ---- reductions over axes -----------------------------------------------------------------

expectType<F32<[], "clients">>(sum(logits));
expectType<I32<["B"], "clients">>(sum(counts, 1));
expectType<F32<[1, 1], "clients">>(sum(logits, undefined, true));
expectType<F32<[10], "clients">>(mean(logits, 0));
expectType<F32<[], "clients">>(mean(logits, [0, 1]));
expectType<F32<["B", 1], "clients">>(mean(logits, -1, true));
expectType<F32<[1, 1], "clients">>(mean(logits, [0, -1], true));
expectType<F32<["B"], "clients">>(max(logits, -1));
expectType<F32<[], "clients">>(max(logits));
expectType<I32<[10], "clients">>(min(counts, 0));
expectType<F32<["B", 1], "clients">>(min(logits, [1], true));
expectType<I32<["B"], "clients">>(argmax(logits));
expectType<I32<[10], "clients">>(argmax(logits, 0));

// ---- dtype conversion and selection -------------------------------------------------------

expectType<F32<["B", 10], "clients">>(cast(counts, "float32"));
expectType<I32<["B", 10], "clients">>(cast(mask, "int32"));
expectType<F32<["B", 10], "clients">>(oneHot(labels, 10));
expectType<F32<["B", 10], "clients">>(where(mask, logits, value<F32<[]>>()));
expectType<I32<["B", 10], "clients">>(where(mask, counts, value<I32<[10]>>()));
expectType<F32<["B", 10], "clients">>(where(mask, logits, 0));
expectType<I32<["B", 10], "clients">>(where(mask, 1, counts));
expectType<F32<["B", 10], "clients">>(clip(logits, -1, 1));
expectType<F32<["B", 10], "clients">>(zerosLike(logits));
expectType<I32<["B"], "clients">>(zerosLike(labels));

// ---- neural-network operations ------------------------------------------------------------

expectType<F32<["B", 10], "clients">>(softmax(logits));
expectType<F32<["B", 10], "clients">>(softmax(logits, 0));
expectType<F32<["B", 10], "clients">>(logSoftmax(logits));
expectType<F32<["B", 10], "clients">>(logSoftmax(logits, -2));
expectType<F32<["B"], "clients">>(logsumexp(logits, -1));
expectType<F32<["B", 1], "clients">>(logsumexp(logits, 1, true));
expectType<F32<[], "clients">>(logsumexp(logits));
expectType<F32<["B", 10], "clients">>(cumsum(logits));
expectType<I32<["B", 10], "clients">>(cumsum(counts, 0, { exclusive: true, reverse: true }));
declare const embedding: F32<[100, 8], "clients-equal">;
expectType<F32<["B", 8], "clients">>(take(embedding, labels));
expectType<F32<["B", 5, 8], "clients">>(take(embedding, value<I32<["B", 5], "clients">>()));
expectType<F32<[3, 2]>>(take(scores, value<I32<[2]>>(), 1));
expectType<F32<[2, 4]>>(take(scores, value<I32<[2]>>(), -2));
expectType<F32<["B", 10], "clients">>(sort(logits));
expectType<I32<["B", 10], "clients">>(sort(counts, 0, true));
expectType<I32<["B", 10], "clients">>(argsort(logits, -1, true));
expectType<F32<["B", 3], "clients">>(topk(logits, 3).values);
expectType<I32<["B", 3], "clients">>(topk(logits, 3).indices);
expectType<F32<["B", 10], "clients">>(layerNorm(logits, bias, bias));
expectType<F32<[3, 4]>>(layerNorm(scores, value<F32<[4]>>(), 0 as unknown as F32<[]>, 1e-3));
// Losses give one value per example.
expectType<F32<["B"], "clients">>(softmaxCrossEntropy(logits, oneHot(labels, 10)));
expectType<F32<["B"], "clients">>(sparseSoftmaxCrossEntropy(logits, labels));
expectType<F32<["B"], "clients">>(meanSquaredError(logits, value<F32<["B", 10], "clients">>()));
expectType<F32<[3]>>(meanSquaredError(scores, 0 as unknown as F32<[4]>));

declare const digits: F32<["N", 28, 28, 1], "clients">;
declare const filters: F32<[5, 5, 1, 32], "clients-equal">;
// "same" padding and stride 1 by default.
expectType<F32<["N", 28, 28, 32], "clients">>(conv2d(digits, filters));
expectType<F32<["N", 24, 24, 32], "clients">>(conv2d(digits, filters, { padding: "valid" }));
expectType<F32<["N", 14, 14, 32], "clients">>(conv2d(digits, filters, { strides: 2 }));
expectType<F32<["N", 12, 12, 32], "clients">>(conv2d(digits, filters, { strides: [2, 2], padding: "valid" }));
expectType<F32<["N", 28, 28, 32], "clients">>(groupNorm(conv2d(digits, filters), value<F32<[32], "clients-equal">>(), value<F32<[32], "clients-equal">>(), 8));
// Strides default to the window.
expectType<F32<["N", 14, 14, 1], "clients">>(maxPool2d(digits, 2));
expectType<F32<["N", 9, 9, 1], "clients">>(maxPool2d(digits, 3, { padding: "valid" }));
expectType<F32<["N", 27, 27, 1], "clients">>(maxPool2d(digits, 2, { strides: 1, padding: "valid" }));
expectType<F32<[number, 14, 14, 32], "clients">>(
  maxPool2d(conv2d(value<F32<[number, 28, 28, 1], "clients">>(), filters), 2),
);
