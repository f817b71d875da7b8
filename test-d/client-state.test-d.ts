/**
 * Client state (docs/language.md "Client state"): keepOnClients keeps CLIENTS values, private
 * ones included, as a program's outputs; state reaches the SERVER, or another client, only
 * through a release. The messages are in test/fixtures/type-errors/ft109-client-state.ts and
 * ft117-client-state.ts.
 */
import { expectError, expectType } from "tsd";
import { add, atClients, atServer, broadcast, dpSum, f32, i32, keepOnClients, map, mul, program, reduceMean, reduceSum, type KeptMark } from "../dist/src/index.js";
import type { F32 } from "./helpers.js";

declare const head: F32<[3], "clients-private">;
declare const counts: F32<[], "clients">;
declare const params: F32<[3], "server">;

// The kept value keeps its type, marked as state.
expectType<F32<[3], "clients-private"> & KeptMark>(keepOnClients(head));
expectType<{ head: F32<[3], "clients-private"> & KeptMark; counts: F32<[], "clients"> & KeptMark }>(keepOnClients({ head, counts }));

// FT117: SERVER and local values are no client's state; FT105 inside map().
expectError(keepOnClients(params));
expectError(keepOnClients({ head, total: reduceSum(counts) }));
expectError(keepOnClients(f32([3]) as unknown as F32<[3]>));
expectError(map((h) => keepOnClients(h), head));

const inputs = { params: atServer(f32([3])), head: atClients(f32([3]), { private: true }), key: atServer(i32([2])) };

// Private state kept, the server moved by a release: allowed.
program(inputs, ({ params, head, key }) => {
  const next = map((h, w) => add(h, mul(w, 0.1)), head, broadcast(params));
  return { params: add(params, dpSum(next, { clip: 1, noiseMultiplier: 1, key })), head: keepOnClients(next) };
});

// FT109: unkept, changed after keeping, reduced, or given to the other clients without a release.
expectError(program(inputs, ({ head }) => ({ head })));
expectError(program(inputs, ({ head }) => ({ head: mul(keepOnClients(head), 2) })));
expectError(reduceSum(keepOnClients(head)));
expectError(program(inputs, ({ head }) => ({ head: keepOnClients(broadcast(reduceMean(head))) })));
