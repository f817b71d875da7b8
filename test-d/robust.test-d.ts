/**
 * Robust aggregators and quantization: median, trimmed mean and Krum take CLIENTS float trees
 * to the SERVER like reduceMean (FT103 for a SERVER or local argument, FT105 inside map(),
 * FT205 for int32); the norm bounds and stochasticQuantize keep their argument's type.
 */
import { expectError, expectType } from "tsd";
import { broadcast, clipByNorm, foldIn, clientIndex, globalNorm, krum, map, reduceMedian, reduceTrimmedMean, stochasticQuantize, zeroAboveNorm } from "../dist/src/index.js";
import { value, type F32, type I32 } from "./helpers.js";

declare const updates: F32<[784, 10], "clients">;
declare const biases: F32<[10], "clients">;
declare const counts: I32<[], "clients">;
declare const weights: F32<[784, 10], "server">;
declare const serverKey: I32<[2], "server">;

expectType<F32<[784, 10], "server">>(reduceMedian(updates));
expectType<{ w: F32<[784, 10], "server">; b: F32<[10], "server"> }>(reduceTrimmedMean({ w: updates, b: biases }, { trim: 0.1 }));
expectType<{ w: F32<[784, 10], "server">; b: F32<[10], "server"> }>(krum({ w: updates, b: biases }, { byzantine: 1, select: 3 }));

// Already at the SERVER (FT103), inside map (FT105), or int32 (FT205).
expectError(reduceMedian(weights));
expectError(reduceTrimmedMean(weights, { trim: 0.1 }));
expectError(krum(weights, { byzantine: 1 }));
expectError(map((u) => reduceMedian(u), updates));
expectError(reduceMedian(counts));
// Options are required where they have no default.
expectError(reduceTrimmedMean(updates));
expectError(krum(updates, { select: 2 }));

// Per-client norm bounds and quantization keep the member's type inside map().
expectType<F32<[784, 10], "clients">>(map((u) => clipByNorm(u, 1), updates));
expectType<F32<[784, 10], "clients">>(map((u) => zeroAboveNorm(u, 1), updates));
expectType<F32<[], "clients">>(map((u) => globalNorm(u), updates));
expectType<F32<[784, 10], "clients">>(map((u, k) => stochasticQuantize(u, foldIn(k, clientIndex()), { bits: 4 }), updates, broadcast(serverKey)));

// Norms and bounds of float32 trees only (FT205, as tracing says).
expectError(globalNorm(value<I32<[3], "clients">>()));
expectError(clipByNorm(value<I32<[3], "clients">>(), 1));
expectError(zeroAboveNorm(value<F32<[3], "clients">>(), value<I32<[], "clients">>()));
