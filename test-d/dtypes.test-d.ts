/**
 * Dtype rules (FT205): float32, int32 and bool never mix without cast(); the float functions
 * need float32; comparisons give bool and only where() and logic take it. Each mistake is next
 * to the corrected code that must pass; the exact texts are checked by test/type-errors.test.ts.
 */
import { expectError, expectType } from "tsd";
import {
  zeros,
  add,
  cast,
  clip,
  concat,
  div,
  equal,
  exp,
  less,
  log,
  logicalAnd,
  logicalNot,
  map,
  matmul,
  maxPool2d,
  cumsum,
  sort,
  take,
  topk,
  groupNorm,
  layerNorm,
  logsumexp,
  mean,
  mul,
  oneHot,
  reduceMean,
  reduceSum,
  softmax,
  sparseSoftmaxCrossEntropy,
  sum,
  where,
} from "../dist/src/index.js";
import { value, type Bool, type F32, type I32 } from "./helpers.js";

declare const images: F32<["B", 784], "clients">;
declare const pixels: I32<["B", 784], "clients">;
declare const labels: I32<["B"], "clients">;
declare const logits: F32<["B", 10], "clients">;
declare const valid: Bool<["B"], "clients">;

// ---- arithmetic: operands of one dtype ----------------------------------------------------

expectType<F32<["B", 784], "clients">>(add(images, cast(pixels, "float32")));
expectType<I32<["B", 784], "clients">>(add(pixels, pixels));
// A plain number takes the other operand's dtype.
expectType<I32<["B", 784], "clients">>(mul(pixels, 2));
expectError(add(images, pixels));
expectError(mul(pixels, images));
expectError(add(valid, valid));

// ---- float-only functions -----------------------------------------------------------------

expectType<F32<["B", 784], "clients">>(div(cast(pixels, "float32"), 255));
expectType<F32<["B", 784], "clients">>(exp(images));
expectType<F32<["B", 784], "clients">>(log(add(images, 1)));
expectType<F32<[], "clients">>(mean(cast(pixels, "float32")));
expectType<F32<["B", 10], "clients">>(softmax(logits));
expectType<F32<["B", 14, 14, 1], "clients">>(maxPool2d(value<F32<["B", 28, 28, 1], "clients">>(), 2));
// Integer division would truncate: FedTensor asks for a cast instead.
expectError(div(pixels, 255));
expectError(exp(pixels));
expectError(mean(pixels));
expectError(logsumexp(pixels, -1));
expectError(cumsum(value<Bool<[3]>>()));
expectError(take(value<F32<[10, 4]>>(), value<F32<[3]>>()));
expectError(take(value<Bool<[10, 4]>>(), value<I32<[3]>>()));
expectError(sort(value<Bool<[3]>>()));
expectError(topk(value<Bool<[3]>>(), 1));
expectError(layerNorm(value<I32<[2, 3]>>(), value<F32<[3]>>(), value<F32<[3]>>()));
expectError(groupNorm(value<I32<[2, 4]>>(), value<F32<[4]>>(), value<F32<[4]>>(), 2));
expectError(softmax(cast(logits, "int32")));
expectError(maxPool2d(value<I32<["B", 28, 28, 1]>>(), 2));

// ---- comparisons and logic ----------------------------------------------------------------

expectType<Bool<["B"], "clients">>(logicalAnd(valid, less(sum(images, 1), 1000)));
expectType<Bool<["B"], "clients">>(logicalNot(equal(labels, 0)));
expectType<Bool<["B"], "clients">>(equal(valid, valid));
// Comparisons are numeric: bool only meets bool, in equal() and logic.
expectError(less(valid, valid));
expectError(logicalAnd(valid, labels));
expectError(logicalNot(labels));
expectError(equal(labels, valid));

// ---- reductions, matmul, concat: dtypes agree ---------------------------------------------

expectType<I32<["B"], "clients">>(sum(pixels, 1));
expectType<I32<[], "clients">>(sum(cast(valid, "int32")));
expectType<F32<["B", 10], "clients">>(matmul(images, value<F32<[784, 10], "clients-equal">>()));
expectType<F32<["B", 1568], "clients">>(concat([images, cast(pixels, "float32")], 1));
expectError(sum(valid));
// Reductions across clients take numbers too: count the flags as int32.
expectType<I32<[], "server">>(reduceSum(map((v) => sum(cast(v, "int32")), valid)));
expectType<F32<[], "server">>(reduceMean(map((v) => mean(cast(v, "float32")), valid)));
expectError(reduceSum(map((v) => equal(sum(cast(v, "int32")), 0), valid)));
expectError(reduceMean(map((x) => sum(x), pixels)));
expectError(matmul(images, value<I32<[784, 10], "clients-equal">>()));
expectError(concat([images, pixels], 1));
expectError(clip(valid, 0, 1));

// ---- labels are int32, conditions are bool ------------------------------------------------

expectType<F32<["B", 10], "clients">>(oneHot(labels, 10));
expectType<F32<["B"], "clients">>(sparseSoftmaxCrossEntropy(logits, labels));
expectType<F32<["B", 10], "clients">>(where(less(logits, 0), value<F32<[]>>(), logits));
expectType<I32<["B"], "clients">>(where(valid, labels, value<I32<[]>>()));
// Labels read as float32 from a data file.
expectError(oneHot(cast(labels, "float32"), 10));
expectError(sparseSoftmaxCrossEntropy(logits, cast(labels, "float32")));
// A 0/1 mask kept as float32 is not a condition.
expectError(where(cast(valid, "float32"), labels, value<I32<[]>>()));
// The two branches of where() have one dtype.
expectError(where(valid, labels, value<F32<[]>>()));

// A constant's dtype is its argument's (float32 by default), never the context's: zeros([1])
// next to an i32 value in concat is FT205, as it is while tracing.
expectType<F32<[1]>>(zeros([1]));
expectError(concat([value<I32<[3], "clients">>(), zeros([1])]));
expectType<I32<[4], "clients">>(concat([value<I32<[3], "clients">>(), zeros([1], "int32")]));
