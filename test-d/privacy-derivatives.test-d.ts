/**
 * Privacy of derivatives and loops in the types (docs/language.md "Privacy"): a gradient with
 * respect to private data is private, jvp's CLIENTS and member tangents are private when a
 * primal or tangent is, a loop's carry is private leaf by leaf, and dpSum's literal options
 * must be > 0 (FT110). A release of private data is a released SERVER value (ReleasedServer):
 * a gradient or jvp tangent of it with respect to a value that is not itself released (the
 * model, its broadcast copy, through dpSum or secureSum) is FT109; stopGradient drops the mark.
 */
import { expectError, expectType } from "tsd";
import { broadcast, dpSum, fori, grad, jvp, map, mul, randomKey, secureSum, stopGradient, sum } from "../dist/src/index.js";
import type { ReleasedServer } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const weights: F32<[3], "server">;
declare const readings: F32<[3], "clients-private">;
declare const plain: F32<[3], "clients">;
declare const key: I32<[2], "server">;

// A gradient with respect to private data is private, even of a loss that does not read it.
expectType<F32<[3], "clients-private">>(grad((x: typeof readings) => sum(dpSum(x, { clip: 1, noiseMultiplier: 1, key })))(readings));
// jvp: tangents of CLIENTS values are private when the primal is.
expectType<[F32<[3], "clients-private">, F32<[3], "clients-private">]>(jvp((x: typeof readings) => mul(x, 2), [readings], [plain]));
expectType<[F32<[3], "clients">, F32<[3], "clients">]>(jvp((x: typeof plain) => mul(x, 2), [plain], [plain]));

// A loop's carry is private leaf by leaf: the SERVER model updated through dpSum stays free.
const after = fori(3, { w: weights, c: plain }, (_i, s) => ({ w: dpSum(map((wm, r) => mul(wm, r), broadcast(s.w), readings), { clip: 1, noiseMultiplier: 1, key }), c: readings }));
expectType<F32<[3], "server">>(after.w);
expectType<F32<[3], "clients-private">>(after.c);

// dpSum's literal options must be > 0.
expectError(dpSum(readings, { clip: 1, noiseMultiplier: 0, key }));
expectError(dpSum(readings, { clip: -2, noiseMultiplier: 1, key }));
expectType<F32<[3], ReleasedServer>>(dpSum(readings, { clip: 0.5, noiseMultiplier: 1.1, key }));

// A release's key is a SERVER key: a local one (randomKey(0), a constant) is refused in tsc too.
expectError(dpSum(readings, { clip: 1, noiseMultiplier: 1, key: randomKey(0) }));
expectError(secureSum(readings, { bits: 20, key: randomKey(0), range: [-1, 1], scale: 1000 }));

// ---- derivatives through a release ---------------------------------------------------------

const copy = broadcast(weights);
const round = (w: typeof weights) => sum(dpSum(map((wm, r) => mul(wm, r), broadcast(w), readings), { clip: 1, noiseMultiplier: 1, key }));
// With respect to the SERVER model (broadcast()'s transpose) and to its broadcast copy: FT109.
expectError(grad(round)(weights));
expectError(grad((c: typeof copy) => sum(dpSum(map((wm, r) => mul(wm, r), c, readings), { clip: 1, noiseMultiplier: 1, key })))(copy));
expectError(grad((c: typeof copy) => sum(secureSum(map((wm, r) => mul(wm, r), c, readings), { bits: 20, key, range: [-1, 1], scale: 1000 })))(copy));
expectError(jvp(round, [weights], [weights]));
// Post-processing: a gradient with respect to the released value itself is free, and so is one
// where stopGradient cuts the path through the release.
const released = dpSum(map((wm, r) => mul(wm, r), broadcast(weights), readings), { clip: 1, noiseMultiplier: 1, key });
expectType<F32<[3], ReleasedServer>>(grad((v: typeof released) => sum(mul(v, v)))(released));
expectType<F32<[3], "server">>(grad((w: typeof weights) => sum(mul(w, stopGradient(released))))(weights));
// A released value is a SERVER value for every other rule: it goes where T@SERVER goes.
const asServer: F32<[3], "server"> = released;
expectType<F32<[3], "clients-equal">>(broadcast(asServer));
