/**
 * secureSum: {T}@CLIENTS to T@SERVER for float32 and int32 trees, like reduceSum; a SERVER or
 * local argument is FT103, a member inside map() FT105, bool FT205 (texts checked by
 * test/type-errors.test.ts), and the key must be a SERVER or local i32[2].
 */
import { expectError, expectType } from "tsd";
import { map, randomKey, secureSum } from "../dist/src/index.js";
import type { Bool, F32, I32 } from "./helpers.js";

declare const key: I32<[2], "server">;
declare const clientKeys: I32<[2], "clients">;
declare const updates: F32<[10], "clients">;
declare const counts: I32<[], "clients">;
declare const flags: Bool<[3], "clients">;
declare const serverWeights: F32<[10], "server">;
declare const localWeights: F32<[10], "local">;

const options = { bits: 20, key, range: [-1, 1], scale: 1000 } as const;

expectType<F32<[10], "server">>(secureSum(updates, options));
expectType<I32<[], "server">>(secureSum(counts, { bits: 16, key, range: [0, 600] }));
const tree = secureSum({ w: updates, n: counts }, { bits: 20, key, range: [-1, 1], scale: 1000 });
expectType<F32<[10], "server">>(tree.w);
expectType<I32<[], "server">>(tree.n);

expectError(secureSum(serverWeights, options));
expectError(secureSum(localWeights, options));
expectError(secureSum(flags, options));
expectError(map((u) => secureSum(u, options), updates));
expectError(secureSum(updates, { ...options, key: clientKeys }));

// The key: a constant (local) key is FT110, a CLIENTS key FT312, in tsc as while tracing.
expectError(secureSum(updates, { bits: 20, key: randomKey(0), range: [-1, 1], scale: 100 }));
expectError(secureSum(updates, { bits: 20, key: clientKeys, range: [-1, 1], scale: 100 }));
// int32 values take no scale (FT312), or a scale of 1.
expectError(secureSum(counts, { bits: 20, key, range: [0, 10], scale: 100 }));
expectType<I32<[], "server">>(secureSum(counts, { bits: 20, key, range: [0, 10], scale: 1 }));
