/**
 * dpQuantile and dpMedian (src/lib/algorithms/quantile.ts) follow dpSum's type rules: a
 * scalar per client, private or not, released to the SERVER (a ReleasedServer value when it is
 * private); a SERVER or local value is FT103, an i32 one FT205.
 */
import { expectError, expectType } from "tsd";
import type { ReleasedServer } from "../dist/src/index.js";
import { dpMedian, dpQuantile } from "../dist/src/lib/index.js";
import type { F32, I32 } from "./helpers.js";

declare const key: I32<[2], "server">;
declare const readings: F32<[], "clients-private">;
declare const counts: F32<[], "clients">;
declare const atServerValue: F32<[], "server">;
declare const localValue: F32<[]>;
declare const ids: I32<[], "clients">;
const options = { lower: 0, upper: 10, noiseMultiplier: 1, key };

expectType<F32<[], ReleasedServer>>(dpMedian(readings, options));
expectType<F32<[], ReleasedServer>>(dpQuantile(readings, { ...options, quantile: 0.9 }));
expectType<F32<[], "server">>(dpMedian(counts, options));
expectError(dpMedian(atServerValue, options));
expectError(dpQuantile(localValue, { ...options, quantile: 0.5 }));
expectError(dpMedian(ids, options));
expectError(dpMedian(readings, { lower: 0, upper: 10, noiseMultiplier: 1 }));
