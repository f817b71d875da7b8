/**
 * The ops of issue 24 point 4: result types (shape, dtype, placement joined over all operands,
 * private where any operand is) and the failures of their rules (dtype FT205, shapes FT201 and
 * FT204, placements FT104).
 */
import { expectError, expectType } from "tsd";
import {
  argmin,
  binaryCrossEntropy,
  floor,
  log1p,
  mod,
  norm,
  round,
  sigmoidCrossEntropy,
  softplus,
  square,
  squaredDistance,
} from "../dist/src/index.js";
import { value, type Bool, type F32, type I32 } from "./helpers.js";

declare const logits: F32<["B", 10], "clients">;
declare const bias: F32<[10], "clients-equal">;
declare const counts: I32<["B", 10], "clients">;
declare const mask: Bool<["B", 10], "clients">;
declare const model: F32<[10], "server">;
declare const readings: F32<["B", 10], "clients-private">;
declare const points: F32<["N", 1, 2]>;
declare const centers: F32<["K", 2]>;

// ---- elementwise --------------------------------------------------------------------------

expectType<F32<["B", 10], "clients">>(square(logits));
expectType<I32<["B", 10], "clients">>(square(counts));
expectType<F32<["B", 10], "clients">>(softplus(logits));
expectType<F32<["B", 10], "clients">>(log1p(logits));
expectType<F32<["B", 10], "clients">>(floor(logits));
expectType<F32<["B", 10], "clients">>(round(logits));
expectType<F32<["B", 10], "clients">>(mod(logits, bias));
expectType<I32<["B", 10], "clients">>(mod(counts, 7));
// Trees, leaf by leaf.
expectType<{ w: F32<[10], "clients-equal">; b: F32<["B", 10], "clients"> }>(square({ w: bias, b: logits }));
// Private operands make private results.
expectType<F32<["B", 10], "clients-private">>(softplus(readings));
expectType<F32<["B", 10], "clients-private">>(mod(logits, readings));

// floor, round, log1p and softplus take f32 only; mod f32 or i32 (the same on both sides); square no bool.
expectError(floor(counts));
expectError(round(counts));
expectError(log1p(counts));
expectError(softplus(counts));
expectError(square(mask));
expectError(mod(mask, mask));
expectError(mod(logits, counts));
// Placements that cannot meet.
expectError(mod(logits, model));

// ---- reductions ---------------------------------------------------------------------------

expectType<I32<["B"], "clients">>(argmin(logits));
expectType<I32<[10], "clients">>(argmin(counts, 0));
expectType<F32<[], "clients">>(norm(logits));
expectType<F32<["B"], "clients">>(norm(logits, { axis: -1 }));
expectType<F32<["B", 1], "clients">>(norm(logits, { ord: 1, axis: 1, keepDims: true }));
expectType<F32<[10], "clients-private">>(norm(readings, { ord: Infinity, axis: [0] }));
expectType<F32<["N", "K"]>>(squaredDistance(points, centers, -1));
expectType<F32<[], "clients">>(squaredDistance(logits, bias));
expectType<F32<["B", 1], "clients">>(squaredDistance(logits, bias, [1], true));
expectType<F32<["B"], "clients-private">>(squaredDistance(bias, readings, -1));

expectError(argmin(mask));
expectError(argmin(logits, 2));
expectError(norm(counts));
expectError(norm(logits, { axis: 3 }));
expectError(squaredDistance(logits, value<F32<[3]>>()));
expectError(squaredDistance(counts, counts));
expectError(squaredDistance(logits, model));

// ---- losses: one value per example --------------------------------------------------------

expectType<F32<["B"], "clients">>(sigmoidCrossEntropy(logits, value<F32<["B", 10], "clients">>()));
expectType<F32<["B"], "clients-private">>(sigmoidCrossEntropy(logits, readings));
expectType<F32<["B"], "clients">>(binaryCrossEntropy(logits, bias));
expectError(sigmoidCrossEntropy(logits, counts));
expectError(binaryCrossEntropy(logits, value<F32<[3]>>()));
expectError(sigmoidCrossEntropy(logits, model));
