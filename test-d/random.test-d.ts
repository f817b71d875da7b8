/**
 * Random numbers: keys are i32[2] values with a placement like any other; draws have the
 * shape asked for and the key's placement; anything but a key is FT316 (texts checked by
 * test/type-errors.test.ts).
 */
import { expectError, expectType } from "tsd";
import { bernoulli, broadcast, clientIndex, dropout, foldIn, map, normal, randomKey, randomPermutation, split, uniform, type DrawnFrom, type Key } from "../dist/src/index.js";
import type { Bool, F32, I32 } from "./helpers.js";

declare const serverKey: I32<[2], "server">;
declare const weights: F32<[10], "server">;
declare const seeds: I32<[3], "server">;
declare const images: F32<["B", 784], "clients">;

expectType<Key<"local">>(randomKey(42));
const [a, b] = split(serverKey);
expectType<Key<"server">>(a);
expectType<Key<"server">>(b);
expectType<[Key<"server">, Key<"server">, Key<"server">]>(split(serverKey, 3));
expectType<Key<"server">>(foldIn(serverKey, 7));

// A draw from a SERVER key records the key, which FT102 names when the draw is read inside map().
expectType<F32<[3, 4], "server"> & DrawnFrom<I32<[2], "server">>>(uniform(serverKey, [3, 4]));
expectType<F32<[5], "server"> & DrawnFrom<I32<[2], "server">>>(uniform(serverKey, [5], { min: -1, max: 1 }));
expectType<F32<["B", 10], "server"> & DrawnFrom<Key<"server">>>(normal(a, ["B", 10]));
expectType<Bool<[8], "server"> & DrawnFrom<Key<"server">>>(bernoulli(b, 0.5, [8]));
expectType<I32<[6], "server">>(randomPermutation(a, 6));
expectType<F32<[10], "server">>(dropout(weights, 0.5, a));

// Inside map(): a broadcast key folded with the client's index gives per-client members.
expectType<F32<["B", 784], "clients">>(map((k, x) => dropout(x, 0.1, foldIn(k, clientIndex())), broadcast(serverKey), images));

// Not keys: FT316.
expectError(uniform(weights, [3]));
expectError(split(seeds));
expectError(foldIn(weights, 1));
expectError(dropout(weights, 0.5, seeds));
// dropout() is for floats (FT205).
expectError(dropout(seeds, 0.5, a));
