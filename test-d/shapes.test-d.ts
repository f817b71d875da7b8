/**
 * Shape rules (SPEC section 4): FT201 broadcasting, FT202 contracted dims, FT203 reshape counts
 * (exact for dims up to 10^9 and products beyond), FT204 axes, FT206 concat/stack. Each code
 * has mistakes that must fail next to the corrected code that must pass; the exact message
 * texts are checked by test/type-errors.test.ts.
 */
import { expectError, expectType } from "tsd";
import {
  add,
  argmax,
  concat,
  conv2d,
  expandDims,
  matmul,
  mean,
  mul,
  reshape,
  slice,
  argsort,
  cumsum,
  take,
  layerNorm,
  logsumexp,
  softmax,
  sort,
  stack,
  sub,
  sum,
  transpose,
  where,
} from "../dist/src/index.js";
import { value, type Bool, type F32, type I32 } from "./helpers.js";

declare const images: F32<["B", 784]>;
declare const logits: F32<["B", 10]>;
declare const bias: F32<[10]>;
declare const weights: F32<[784, 10]>;
declare const sequence: F32<["B", "T", 16]>;

// ---- broadcasting, aligned from the right (FT201) -----------------------------------------

expectType<F32<["B", 10]>>(add(logits, bias));
// Per-row values broadcast along a unit dim.
expectType<F32<["B", 10]>>(sub(logits, value<F32<["B", 1]>>()));
expectType<F32<[5, "B", 10]>>(mul(logits, value<F32<[5, 1, 10]>>()));
// A dim known only at run time agrees with anything here (checked at run time).
expectType<F32<["B", 10]>>(add(logits, value<F32<[number, 10]>>()));
expectType<F32<["B", 10]>>(where(value<Bool<["B", 1]>>(), logits, bias));
// A bias of the input width, not the output width.
expectError(add(logits, value<F32<[784]>>()));
// Per-row values without the unit dim align with the columns.
expectError(sub(logits, value<F32<["B"]>>()));
// Different named dims are different sizes.
expectError(add(logits, value<F32<["C", 10]>>()));
// A named dim meets a literal only through 1.
expectError(add(logits, value<F32<[32, 10]>>()));
expectError(where(value<Bool<["B", 10]>>(), logits, value<F32<[3]>>()));
// Batch dims of matmul broadcast like elementwise dims.
expectError(matmul(value<F32<[8, 3, 4]>>(), value<F32<[7, 4, 5]>>()));

// ---- contracted dims of matmul and conv2d (FT202) -----------------------------------------

expectType<F32<["B", 10]>>(matmul(images, weights));
expectType<F32<["B", 10]>>(matmul(images, transpose(value<F32<[10, 784]>>())));
// Batched, with batch dims broadcast.
expectType<F32<[8, 3, 5]>>(matmul(value<F32<[8, 3, 4]>>(), value<F32<[8, 4, 5]>>()));
expectType<F32<[8, 3, 5]>>(matmul(value<F32<[8, 3, 4]>>(), value<F32<[4, 5]>>()));
expectType<F32<[2, 8, 3, 5]>>(matmul(value<F32<[2, 1, 3, 4]>>(), value<F32<[8, 4, 5]>>()));
// Rank-1 operands are vectors.
expectType<F32<[10]>>(matmul(value<F32<[784]>>(), weights));
expectType<F32<["B"]>>(matmul(images, value<F32<[784]>>()));
expectType<F32<[]>>(matmul(bias, bias));
expectType<F32<["N", 24, 24, 32]>>(conv2d(value<F32<["N", 28, 28, 3]>>(), value<F32<[5, 5, 3, 32]>>(), { padding: "valid" }));
// Weights stored as [out, in]: transpose them.
expectError(matmul(images, value<F32<[10, 784]>>()));
expectError(matmul(value<F32<[8, 3, 4]>>(), value<F32<[8, 5, 6]>>()));
expectError(matmul(value<F32<[784]>>(), bias));
// An RGB image through a filter for grey images.
expectError(conv2d(value<F32<["N", 28, 28, 3]>>(), value<F32<[5, 5, 1, 32]>>()));

// ---- reshape keeps the element count (FT203) ----------------------------------------------

expectType<F32<["B", 28, 28, 1]>>(reshape(images, ["B", 28, 28, 1]));
// -1 takes the named dim that balances the counts.
expectType<F32<["B", 28, 28, 1]>>(reshape(images, [-1, 28, 28, 1]));
expectType<F32<["B", 7840]>>(reshape(value<F32<["B", 10, 784]>>(), [-1, 7840]));
// Named dims are factors: their order does not matter.
expectType<F32<["T", "B", 4, 4]>>(reshape(sequence, ["T", "B", 4, 4]));
// -1 with an unknown balance is unknown.
expectType<F32<[number, 16]>>(reshape(sequence, [-1, 16]));
expectType<F32<[number, 4, 4]>>(reshape(value<F32<[number, 16]>>(), [-1, 4, 4]));
// Dims up to 10^9 and counts beyond 2^32 are compared exactly.
expectType<F32<[4000000000]>>(reshape(value<F32<[1000000000, 4]>>(), [4000000000]));
expectType<F32<[3999999996]>>(reshape(value<F32<[999999999, 4]>>(), [3999999996]));
expectType<F32<[7, 1000000000000]>>(reshape(value<F32<[1000000, 1000000, 7]>>(), [7, 1000000000000]));
expectType<F32<[1000000000, 1000000000]>>(reshape(value<F32<[1000000000000000000]>>(), [1000000000, 1000000000]));
expectError(reshape(images, ["B", 28, 29]));
expectError(reshape(images, [28, 28]));
expectError(reshape(sequence, ["T", "T", 16]));
expectError(reshape(value<F32<[1000000000, 4]>>(), [4000000001]));
expectError(reshape(value<F32<[999999999, 4]>>(), [4000000000]));
expectError(reshape(value<F32<[1000000, 1000000, 7]>>(), [7, 1000000000001]));

// ---- axes in range (FT204) ----------------------------------------------------------------

expectType<F32<["B"]>>(sum(logits, 1));
expectType<F32<["B", 1]>>(sum(logits, -1, true));
expectType<F32<[10]>>(mean(logits, -2));
expectType<F32<["B", 10]>>(softmax(logits, -1));
expectType<F32<[10, "B"]>>(transpose(logits, [1, 0]));
expectType<F32<["B", 1, 10]>>(expandDims(logits, -2));
expectType<F32<["B", 20]>>(concat([logits, logits], -1));
expectError(sum(logits, 2));
expectError(mean(logits, [0, -3]));
expectError(softmax(logits, 2));
expectError(logsumexp(logits, 2));
expectError(cumsum(logits, -3));
expectError(take(logits, value<I32<[2]>>(), 2));
expectError(sort(logits, 2));
expectError(argsort(logits, -3));
// layerNorm's scale must broadcast with x.
expectError(layerNorm(logits, value<F32<[3]>>(), value<F32<[10]>>()));
expectError(logsumexp(logits, [0, -3], true));
expectError(argmax(logits, 2));
expectError(expandDims(logits, 3));
expectError(concat([logits, logits], 2));
expectError(stack([bias, bias], 2));
// A permutation names every axis exactly once.
expectError(transpose(logits, [0, 0]));
expectError(transpose(logits, [2, 1, 0]));
expectError(transpose(sequence, [1, 0]));
// A slice's block lies inside each literal dim (exact for dims up to 10^9).
expectType<F32<[2, 10]>>(slice(value<F32<[8, 10]>>(), [6, 0], [2, -1]));
expectError(slice(value<F32<[8, 10]>>(), [7, 0], [2, -1]));
expectError(slice(value<F32<[8, 10]>>(), [0, 11], [-1, -1]));
expectError(slice(value<F32<[1000000000, 4]>>(), [999999999, 0], [2, 4]));

// ---- concat and stack agree outside the axis (FT206) --------------------------------------

expectType<F32<["B", 15]>>(concat([logits, value<F32<["B", 5]>>()], 1));
expectType<F32<[30]>>(concat([bias, bias, bias]));
// Named dims add up to a size known only at run time.
expectType<F32<[number, 784]>>(concat([images, images]));
expectType<F32<[2, 10]>>(stack([bias, bias]));
expectType<F32<["B", 10, 3]>>(stack([logits, logits, logits], -1));
expectError(concat([logits, images], 0));
expectError(concat([logits, value<F32<["C", 5]>>()], 1));
expectError(concat([bias, bias, value<F32<[3, 10]>>()]));
expectError(stack([bias, value<F32<[11]>>()]));
expectError(stack([logits, transpose(logits)]));
