/**
 * Privacy (docs/language.md "Privacy"): private CLIENTS inputs, the taint that follows them
 * through every operation, and FT109 for each path by which they would reach the SERVER or
 * the outputs other than through dpSum; FT110 for dpSum's options. The exact message texts are
 * checked by test/type-errors.test.ts (fixtures ft109-private-data.ts, ft110-dp-sum.ts).
 */
import { expectError, expectType } from "tsd";
import {
  add,
  aggregate,
  atClients,
  atServer,
  broadcast,
  dpSum,
  f32,
  fori,
  grad,
  i32,
  map,
  mean,
  mul,
  program,
  reduceMax,
  reduceMean,
  reduceMin,
  reduceSum,
  reduceWeightedMean,
  secureSum,
  sub,
  sum,
  valueAndGrad,
  zeros,
  type TensorSpec,
} from "../dist/src/index.js";
import type { ReleasedServer } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const weights: F32<[3], "server">;
declare const readings: F32<["N", 3], "clients-private">;
declare const counts: F32<[], "clients">;
declare const key: I32<[2], "server">;
declare const clip: F32<[], "server">;

// ---- declaring private inputs -------------------------------------------------------------

expectType<TensorSpec<["N", 3], "float32", "clients-private">>(atClients(f32(["N", 3]), { private: true }));
expectType<TensorSpec<["N", 3], "float32", "clients">>(atClients(f32(["N", 3]), { private: false }));
expectType<TensorSpec<["N", 3], "float32", "clients">>(atClients(f32(["N", 3])));

// ---- the taint follows the data ----------------------------------------------------------

const means = map((r) => mean(r, 0), readings);
expectType<F32<[3], "clients-private">>(means);
// Inside map(), a private argument's members are private; others are not.
map((w, r, c) => {
  expectType<F32<[3], "member">>(w);
  expectType<F32<["N", 3], "member-private">>(r);
  expectType<F32<[], "member">>(c);
  return add(w, c);
}, broadcast(weights), readings, counts);
// Results computed without private members stay free, per leaf.
expectType<{ free: F32<[3], "clients">; data: F32<[3], "clients-private"> }>(
  map((w, r) => ({ free: mul(w, 2), data: mean(r, 0) }), broadcast(weights), readings),
);
// Joined with SERVER-model copies or non-private inputs, the result is private.
expectType<F32<[3], "clients-private">>(add(broadcast(weights), means));
expectType<F32<[3], "clients-private">>(mul(means, counts));
// An array literal returned without `as const` is a tuple too: each leaf keeps its own privacy,
// so the public one may still be reduced (it used to become (public | private)[], all private).
const pair = map((w, r) => [mul(w, 2), mean(r, 0)], broadcast(weights), readings);
expectType<[F32<[3], "clients">, F32<[3], "clients-private">]>(pair);
expectType<F32<[3], "server">>(reduceSum(pair[0]));
expectError(reduceSum(pair[1]));
// A loop that reads private data leaves a private carry; so does a gradient of a private loss.
expectType<F32<[3], "clients-private">>(map((w, r) => fori(2, w, (_i, v) => sub(v, mean(r, 0))), broadcast(weights), readings));
expectType<F32<[3], "clients-private">>(map((w, r) => grad((v: typeof w) => sum(mul(v, mean(r, 0))))(w), broadcast(weights), readings));
expectType<F32<[3], "clients-private">>(map((w, r) => valueAndGrad((v: typeof w) => sum(mul(v, mean(r, 0))))(w)[1], broadcast(weights), readings));
// A gradient of a loss free of private data is free.
expectType<F32<[3], "clients">>(map((w, c) => grad((v: typeof w) => sum(mul(v, c)))(w), broadcast(weights), counts));

// ---- FT109: every plain reduction, aggregate, and the outputs -----------------------------

expectError(reduceSum(means));
expectError(reduceMean(means));
expectError(reduceMax(means));
expectError(reduceMin(means));
expectError(reduceWeightedMean(means, counts));
expectError(reduceSum({ a: map((r) => mean(r), readings), b: counts }));
expectError(reduceMean(add(broadcast(weights), means)));
expectError(
  aggregate(readings, {
    zero: () => zeros(["N", 3]),
    accumulate: (acc) => acc,
    merge: (a) => a,
    report: (acc) => acc,
  }),
);
expectError(program({ x: atClients(f32([3]), { private: true }) }, ({ x }) => x));
expectError(program({ x: atClients(f32([3]), { private: true }) }, ({ x }) => ({ kept: map((m) => mul(m, 2), x) })));

// ---- allowed: dpSum, non-private inputs, per-client gradients -----------------------------

expectType<F32<[3], ReleasedServer>>(dpSum(means, { clip: 1, noiseMultiplier: 1.1, key }));
expectType<F32<[3], ReleasedServer>>(dpSum(means, { clip, noiseMultiplier: 1.1, key }));
expectType<{ w: F32<[3], ReleasedServer> }>(dpSum({ w: means }, { clip, noiseMultiplier: 0.5, key }));
expectType<F32<[], "server">>(reduceSum(counts));
expectType<F32<[3], ReleasedServer>>(
  dpSum(
    map((w, r) => grad((v: typeof w) => sum(mul(v, mean(r, 0))))(w), broadcast(weights), readings),
    { clip, noiseMultiplier: 1, key },
  ),
);
// A program whose outputs come from dpSum and non-private inputs.
program({ x: atClients(f32([3]), { private: true }), c: atClients(f32([])), k: atServer(i32([2])) }, ({ x, c, k }) => ({
  mean: dpSum(x, { clip: 1, noiseMultiplier: 1, key: k }),
  count: reduceSum(c),
}));

// ---- FT110: dpSum's options are the SERVER's, dpSum takes float32 -------------------------

expectError(dpSum(means, { clip: counts, noiseMultiplier: 1, key }));
expectError(dpSum(means, { clip, noiseMultiplier: means, key }));
expectError(dpSum(means, { clip, noiseMultiplier: 1, key: clip }));
expectError(dpSum(map((r) => mean(r, 0), readings), { clip: 1, noiseMultiplier: 1, key: weights }));
declare const integers: I32<[3], "clients-private">;
expectError(dpSum(integers, { clip, noiseMultiplier: 1, key }));
// FT103: dpSum takes CLIENTS values.
expectError(dpSum(weights, { clip, noiseMultiplier: 1, key }));

// ---- secureSum declassifies too -------------------------------------------------------------

expectType<F32<[3], ReleasedServer>>(secureSum(means, { bits: 20, key, range: [-1, 1], scale: 1000 }));
