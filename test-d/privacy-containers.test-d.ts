/**
 * The leak classes of issue 29 that plain tsc used to accept: each fires now, and the correct
 * code next to it passes. test/privacy/taint-containers.test.ts generates the same over every
 * container and position, and traces each program.
 */
import { expectAssignable, expectError, expectType } from "tsd";
import { atClients, dpSum, f32, mean, mul, program, reduceMean, reduceSum, type Tensor } from "../dist/src/index.js";
import { aggregationStages as s, aggregator, aggregatorOf, clientBatchSpecs, logistic, releasesPrivateData, type Aggregator } from "../dist/src/lib/index.js";
import { value, type F32, type I32 } from "./helpers.js";

declare const w: F32<[3], "server">;
declare const x: F32<[3], "clients">;
declare const p: F32<[3], "clients-private">;
declare const key: I32<[2], "server">;

// Plain arrays, readonly arrays, nested arrays and arrays aliased to a wider type are walked.
expectError(reduceSum([w, w])); // FT103: the SERVER leaves
expectError(reduceSum([x, p])); // FT109
expectError(reduceSum(value<readonly F32<[3], "clients-private">[]>()));
expectError(reduceSum([[x], [x, p]]));
expectError(reduceSum(value<F32<[3], "clients" | "clients-private">[]>()));
expectError(program({}, () => value<F32<[3], "clients" | "clients-private">>()));
expectType<F32<[3], "server">[]>(reduceSum([x, x]));
expectType<F32<[3], "server">[][]>(reduceSum([[x], [x, x]]));
expectAssignable<object>(dpSum([x, p], { clip: 1, noiseMultiplier: 1, key }));

// Records with numeric keys, and index signatures (Object.fromEntries of typed entries).
expectError(reduceSum({ 0: x, 1: p }));
expectError(reduceSum(value<{ [name: string]: F32<[3], "clients"> | F32<[3], "clients-private"> }>()));
expectType<{ 0: F32<[3], "server">; 1: F32<[3], "server"> }>(reduceSum({ 0: x, 1: x }));
expectType<{ [name: string]: F32<[3], "server"> }>(reduceSum(Object.fromEntries([["a", x]] as [string, typeof x][])));

// `{ private: true }` held in a variable widens to boolean: the input is private (fail closed).
const flag = { private: true };
expectType<"clients-private">(atClients(f32([3]), flag).placement);
expectType<"clients-private">(atClients(f32([3]), value<{ private: boolean }>()).placement);
expectType<"clients">(atClients(f32([3]), { private: false }).placement);
expectType<"clients">(atClients(f32([3])).placement);
expectType<"clients">(atClients(f32([3]), {}).placement);

// clientBatchSpecs keeps the flag.
expectType<"clients-private">(clientBatchSpecs(logistic, { private: true }).count.placement);
expectType<"clients-private">(clientBatchSpecs(logistic, flag).x.placement);
expectType<"clients">(clientBatchSpecs(logistic).count.placement);

// A member-private value returned from the program.
let leaked: F32<[3], "member-private"> | undefined;
expectError(program({ p: atClients(f32([3]), { private: true }) }, () => leaked!));
expectAssignable<object>(program({ p: atClients(f32([3]), { private: true }) }, ({ p: q }) => dpSum(q, { clip: 1, noiseMultiplier: 1, key: value<I32<[2], "server">>() })));

// A helper typed without a placement: its results are refused where they would be released or
// returned (FT115); `any` and what failed operations compute from it stay silent.
const columnMean = (t: Tensor<["N", 3], "float32">) => mean(t, 0);
declare const rows: F32<["N", 3], "clients-private">;
expectError(reduceSum(columnMean(rows)));
expectError(reduceMean(value<Tensor>()));
expectError(program({}, () => ({ m: columnMean(value<F32<["N", 3], "server">>()) })));
expectAssignable<object>(dpSum(columnMean(rows), { clip: 1, noiseMultiplier: 1, key }));
const placedMean = (t: F32<["N", 3], "clients-private">) => mean(t, 0);
expectError(reduceSum(placedMean(rows))); // FT109, as it should
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const opaque: any;
expectType<F32<[3], "server">>(reduceSum(mul(x, 2)));
reduceSum(mean(opaque, 0)); // no diagnostic: the `any` opted out

// An aggregator's next() checks its round data: private counts would weigh a plain mean.
const publicData = { mask: value<F32<["S", "B"], "clients">>(), count: value<F32<[], "clients">>() };
const privateCounts = { mask: value<F32<["S", "B"], "clients">>(), count: value<F32<[], "clients-private">>() };
expectError(aggregator(s.mean()).next(x, privateCounts, {}));
expectType<F32<[3], "server">>(aggregator(s.mean()).next(x, publicData, {}).value);
const dpHypers = { clip: value<F32<[], "server">>(), noiseMultiplier: 1, expectedClients: 4, key, round: 0 };
expectAssignable<F32<[3], "server">>(aggregator(s.clip(1), s.dp()).next(p, privateCounts, dpHypers).value);

// A chain built at run time releases or not: private data is refused until narrowed by
// `releases`; through a value typed Aggregator (releases: boolean) it is FT116 until narrowed by
// releasesPrivateData().
const chain = aggregatorOf([{ kind: "mean" }]);
expectError(chain.next(p, publicData, {}));
expectError(chain.next(x, privateCounts, {}));
expectAssignable<object>(chain.next(x, publicData, {}));
if (chain.releases) {
  expectAssignable<object>(chain.next(p, privateCounts, {}));
}
const typed: Aggregator = chain;
expectError(typed.next(p, publicData, {}));
expectError(typed.next(x, privateCounts, {}));
expectAssignable<object>(typed.next(x, publicData, {}));
if (releasesPrivateData(typed)) {
  expectAssignable<object>(typed.next(p, privateCounts, {}));
}
