/**
 * distributedDpSum: private CLIENTS trees to public SERVER trees (it declassifies, as dpSum);
 * a SERVER value is FT103, an int32 leaf FT205, a rotation key at the CLIENTS a type error.
 */
import { expectError, expectType } from "tsd";
import { distributedDpSum } from "../dist/src/index.js";
import type { F32, I32 } from "./helpers.js";

declare const secrets: F32<[784, 10], "clients-private">;
declare const biases: F32<[10], "clients-private">;
declare const counts: I32<[3], "clients">;
declare const weights: F32<[784, 10], "server">;
declare const rotationKey: I32<[2], "server">;
declare const clientKeys: I32<[2], "clients">;
declare const clientKey: I32<[2], "clients">;
const options = { clip: 1, noiseMultiplier: 1, bits: 16, minClients: 10, maxClients: 20, rotationKey, clientKeys };

expectType<{ w: F32<[784, 10], "server">; b: F32<[10], "server"> }>(distributedDpSum({ w: secrets, b: biases }, options));
expectError(distributedDpSum(weights, options));
expectError(distributedDpSum(counts, options));
expectError(distributedDpSum(secrets, { ...options, rotationKey: clientKey }));
