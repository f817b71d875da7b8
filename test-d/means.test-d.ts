/**
 * dpMean and secureMean (docs/language.md "Privacy", "Secure aggregation"): private CLIENTS
 * data in, a free SERVER value out (no FT109), as dpSum and secureSum; their options' checks;
 * secureSum's `scale` required by the type for float32 data; RdpAccountant and secretKey.
 */
import { expectAssignable, expectError, expectType } from "tsd";
import { dpMean, map, mean, RdpAccountant, reduceMean, secretKey, secureMean, secureSum, type HostTensor, type PrivacySpent } from "../dist/src/index.js";
import type { ReleasedServer } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const readings: F32<["N", 3], "clients-private">;
declare const updates: F32<[3], "clients">;
declare const counts: I32<[], "clients-private">;
declare const weights: F32<[], "clients">;
declare const serverWeights: F32<[], "server">;
declare const key: I32<[2], "server">;
declare const cohort: F32<[], "server">;
declare const integers: I32<[3], "clients">;

const means = map((r) => mean(r, 0), readings);

// ---- dpMean: private in, SERVER out ---------------------------------------------------------

expectType<F32<[3], ReleasedServer>>(dpMean(means, { clip: 1, noiseMultiplier: 1.1, key, expectedClients: 100 }));
expectType<F32<[3], ReleasedServer>>(dpMean(means, { clip: 1, noiseMultiplier: 1.1, key, expectedClients: cohort }));
expectType<{ w: F32<[3], ReleasedServer> }>(dpMean({ w: means }, { clip: cohort, noiseMultiplier: 2, key, expectedClients: 40 }));
expectError(reduceMean(means));
// FT110: the expected cohort is the SERVER's, > 0; FT103 for a SERVER argument; FT205 for i32 data.
expectError(dpMean(means, { clip: 1, noiseMultiplier: 1, key, expectedClients: weights }));
expectError(dpMean(means, { clip: 1, noiseMultiplier: 1, key, expectedClients: 0 }));
expectError(dpMean(means, { clip: 1, noiseMultiplier: 1, key, expectedClients: -5 }));
expectError(dpMean(means, { clip: 1, noiseMultiplier: 1, key }));
expectError(dpMean(cohort, { clip: 1, noiseMultiplier: 1, key, expectedClients: 3 }));
expectError(dpMean(integers, { clip: 1, noiseMultiplier: 1, key, expectedClients: 3 }));
expectError(map((m) => dpMean(m, { clip: 1, noiseMultiplier: 1, key, expectedClients: 3 }), means));

// ---- secureMean: private in, SERVER out, uniform or weighted ---------------------------------

expectType<F32<[3], ReleasedServer>>(secureMean(means, { bits: 20, key, range: [-1, 1], scale: 1000 }));
expectType<F32<[3], ReleasedServer>>(secureMean(means, { bits: 24, key, range: [-1, 1], scale: 1000, weights: counts, maxWeight: 600 }));
expectType<F32<[3], "server">>(secureMean(updates, { bits: 24, key, range: [-1, 1], scale: 1000, weights, maxWeight: 1 }));
// Weights are CLIENTS scalars; scale is required (x is float32); i32 data is FT205.
expectError(secureMean(means, { bits: 24, key, range: [-1, 1], scale: 1000, weights: serverWeights, maxWeight: 1 }));
expectError(secureMean(means, { bits: 24, key, range: [-1, 1], scale: 1000, weights: means, maxWeight: 1 }));
expectError(secureMean(means, { bits: 20, key, range: [-1, 1] }));
expectError(secureMean(integers, { bits: 20, key, range: [-1, 1], scale: 1 }));
expectError(secureMean(cohort, { bits: 20, key, range: [-1, 1], scale: 1000 }));

// ---- secureSum: scale required for float32 data, optional for int32 --------------------------

expectType<F32<[3], "server">>(secureSum(updates, { bits: 20, key, range: [-1, 1], scale: 1000 }));
expectError(secureSum(updates, { bits: 20, key, range: [-1, 1] }));
expectError(secureSum({ a: updates, n: counts }, { bits: 20, key, range: [-1, 1] }));
expectType<I32<[], ReleasedServer>>(secureSum(counts, { bits: 16, key, range: [0, 600] }));

// ---- host helpers -----------------------------------------------------------------------------

expectAssignable<HostTensor>(secretKey());
const accountant = new RdpAccountant().step(0.01, 1.1).step(0.02, 1.3, 100);
expectType<number>(accountant.epsilon(1e-5));
expectType<number[]>(accountant.rdp());
expectType<readonly number[]>(accountant.orders);
expectType<PrivacySpent>(accountant.spent(1e-5));
