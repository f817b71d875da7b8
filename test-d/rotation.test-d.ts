/**
 * The randomized Hadamard rotation: a float tensor of any shape goes to f32[number] (the padded
 * length is known only when traced) at the placement where it meets the key; a key shared by
 * every client is allowed inside map(); private data stays private; the inverse takes the shape
 * back. Non-float operands are FT205, non-keys FT316, a CLIENTS value with a SERVER key FT104.
 */
import { expectError, expectType } from "tsd";
import { broadcast, inverseRandomHadamard, map, randomHadamard, reduceSum } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const updates: F32<[784, 10], "clients">;
declare const secrets: F32<[784, 10], "clients-private">;
declare const serverKey: I32<[2], "server">;
declare const weights: F32<[784, 10], "server">;
declare const counts: I32<[4], "server">;

expectType<F32<[number], "server">>(randomHadamard(weights, serverKey));
expectType<F32<[784, 10], "server">>(inverseRandomHadamard(randomHadamard(weights, serverKey), serverKey, [784, 10]));
expectType<F32<[number], "clients">>(map((u, k) => randomHadamard(u, k), updates, broadcast(serverKey)));
expectType<F32<[number], "clients-private">>(map((u, k) => randomHadamard(u, k), secrets, broadcast(serverKey)));
expectType<F32<[number], "server">>(inverseRandomHadamard(reduceSum(map((u, k) => randomHadamard(u, k), updates, broadcast(serverKey))), serverKey));

expectError(randomHadamard(counts, serverKey));
expectError(randomHadamard(weights, weights));
expectError(randomHadamard(updates, serverKey));
