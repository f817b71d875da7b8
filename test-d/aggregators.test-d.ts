/**
 * Aggregator chains in the types: a chain of literal stages releases (Releases) exactly when it
 * holds dp, secure or distributed-dp; chains that cannot work are FT114 with the reason; an algorithm's round
 * function given a releasing chain takes private client data and returns no loss, and without
 * one private data stays FT109.
 */
import { expectAssignable, expectError, expectType } from "tsd";
import type { Program } from "../dist/src/index.js";
import { aggregationStages as s, aggregator, fedAvg, fedAvgProgram, fedProx, fedProxProgram, logistic, type ChainCheck } from "../dist/src/lib/index.js";
import { value, type F32, type I32 } from "./helpers.js";

type Logistic<P extends "server" | "clients-private"> = { w: F32<[784, 10], P>; b: F32<[10], P> };
type Data<P extends "clients" | "clients-private"> = { x: F32<["S", "B", 784], P>; y: I32<["S", "B"], P>; mask: F32<["S", "B"], P>; count: F32<[], P> };
declare const serverParams: Logistic<"server">;
declare const privateData: Data<"clients-private">;

const secureStage = s.secure({ bits: 30, clip: 1, maxWeight: 600, maxClients: 100 });
expectType<true>(aggregator(s.clip(1), s.dp()).releases);
expectType<true>(aggregator(s.quantize(4, { rotation: true }), secureStage).releases);
expectType<true>(aggregator(s.clip(1), s.dp(), secureStage).releases);
expectType<false>(aggregator(s.zeroing(2), s.median()).releases);
expectType<false>(aggregator(s.clip(1), s.mean()).releases);
const ddpStage = s.distributedDp({ clip: 1, noiseMultiplier: 1, bits: 16, minClients: 3, maxClients: 10 });
expectType<true>(aggregator(ddpStage).releases);
expectType<true>(aggregator(s.attack("scale"), s.zeroing(2), ddpStage).releases);

// A median over masked values, noise before clipping, dp without a clip, two dp stages: FT114.
expectError(aggregator(secureStage, s.median()));
expectError(aggregator(s.dp(), s.clip(1)));
expectError(aggregator(s.dp()));
expectError(aggregator(s.clip(1), s.dp(), s.dp()));
expectType<"FT114: aggregator secure,krum: krum needs each client's value, and secure aggregation shows the server only the sum of masked values">(
  value<ChainCheck<[ReturnType<typeof s.secure>, ReturnType<typeof s.krum>]>>(),
);
// distributed-dp is the chain's only server stage, and clips, rotates and rounds itself: FT114 with the reason, as FT326.
expectError(aggregator(s.clip(1), ddpStage));
expectError(aggregator(s.quantize(4), ddpStage));
expectError(aggregator(s.clip(1), s.dp(), ddpStage));
expectError(aggregator(ddpStage, s.mean()));
expectError(aggregator(ddpStage, s.median()));
type Ddp = ReturnType<typeof s.distributedDp>;
expectType<"FT114: aggregator distributed-dp,secure: distributed-dp is itself the secure sum and its noise, so no secure stage goes with it">(value<ChainCheck<[Ddp, ReturnType<typeof s.secure>]>>());
expectType<"FT114: aggregator distributed-dp,mean: distributed-dp divides its sum by the number of clients that took part, so no mean stage goes with it">(value<ChainCheck<[Ddp, ReturnType<typeof s.mean>]>>());
expectType<"FT114: aggregator zeroing,distributed-dp,krum: krum needs each client's value, and distributed-dp shows the server only the noised sum">(
  value<ChainCheck<[ReturnType<typeof s.zeroing>, Ddp, ReturnType<typeof s.krum>]>>(),
);
expectType<"FT114: aggregator clip,distributed-dp: distributed-dp clips each client's whole update to its own bound (--ddp-clip), so no clip stage goes before it">(
  value<ChainCheck<[ReturnType<typeof s.clip<1>>, Ddp]>>(),
);
expectType<"FT114: aggregator quantize,distributed-dp: distributed-dp rotates and rounds each update itself, to its modulus 2^bits, so no quantize stage goes before it">(
  value<ChainCheck<[ReturnType<typeof s.quantize>, Ddp]>>(),
);

// With a releasing chain the round takes private data and reports no loss; without, FT109.
const dpHypers = { lr: 0.1, clip: value<F32<[], "server">>(), noiseMultiplier: 1, expectedClients: 10, key: value<I32<[2], "server">>(), round: 0 };
const privateRound = fedProx(logistic, { aggregator: aggregator(s.clip(1), s.dp()) });
expectAssignable<{ params: Logistic<"server"> }>(privateRound(serverParams, privateData, { ...dpHypers, mu: 0.01 }));
// Its hyperparameters are the chain's inputs: all of dp's, and the key at the SERVER.
expectError(privateRound(serverParams, privateData, { lr: 0.1, mu: 0.01 }));
expectError(privateRound(serverParams, privateData, { ...dpHypers, mu: 0.01, key: value<I32<[2], "clients">>() }));
expectError(fedAvg(logistic)(serverParams, privateData, { lr: 0.1 }));
expectError(fedAvg(logistic, { aggregator: aggregator(s.median()) })(serverParams, privateData, { lr: 0.1 }));

// A program given a chain of literal stages takes the chain's inputs and, when it releases, private data and no loss.
type InputsOf<P> = P extends Program<infer I, unknown> ? I : never;
type OutputsOf<P> = P extends Program<infer _I, infer O> ? O : never;
const dpProgram = fedProxProgram(logistic, { aggregator: aggregator(s.clip(1), s.dp()) });
expectType<"params" | "lr" | "x" | "y" | "mask" | "count" | "mu" | "clip" | "noiseMultiplier" | "expectedClients" | "targetQuantile" | "clipLr" | "countStddev" | "key" | "round">(
  value<keyof InputsOf<typeof dpProgram>>(),
);
expectType<"params" | "clip">(value<keyof OutputsOf<typeof dpProgram>>());
expectType<"clients-private">(value<InputsOf<typeof dpProgram>["x"]["placement"]>());
const robustProgram = fedAvgProgram(logistic, { aggregator: aggregator(s.quantize(2, { rotation: true }), s.median()) });
expectType<"params" | "loss">(value<keyof OutputsOf<typeof robustProgram>>());
expectType<"clients">(value<InputsOf<typeof robustProgram>["x"]["placement"]>());
// distributed-dp adds the round's key and the clients' own keys, private as their data.
const ddpProgram = fedAvgProgram(logistic, { aggregator: aggregator(s.zeroing(2), ddpStage) });
expectType<"params" | "lr" | "x" | "y" | "mask" | "count" | "key" | "round" | "clientKeys">(value<keyof InputsOf<typeof ddpProgram>>());
expectType<"clients-private">(value<InputsOf<typeof ddpProgram>["clientKeys"]["placement"]>());
expectType<"params">(value<keyof OutputsOf<typeof ddpProgram>>());
// Without a chain, the program is the algorithm's as before.
expectType<"params" | "loss">(value<keyof OutputsOf<ReturnType<typeof fedAvgProgram<typeof logistic>>>>());

// next (TFF's AggregationProcess.next): {T}@CLIENTS to T@SERVER, with the next state.
const perClient = { count: value<F32<[], "clients">>(), mask: value<F32<["S", "B"], "clients">>() };
const privatePerClient = { count: value<F32<[], "clients-private">>(), mask: value<F32<["S", "B"], "clients-private">>() };
const plainNext = aggregator(s.zeroing(2), s.mean()).next(value<{ w: F32<[3], "clients">; b: F32<[], "clients"> }>(), perClient, { key: value<I32<[2], "server">>(), round: 0 });
expectType<{ w: F32<[3], "server">; b: F32<[], "server"> }>(plainNext.value);
// Private values through a chain that does not release: FT109; a SERVER value: FT103; int32: FT205.
expectError(aggregator(s.median()).next(value<F32<[3], "clients-private">>(), privatePerClient, {}));
expectError(aggregator(s.median()).next(value<F32<[3], "server">>(), perClient, {}));
expectError(aggregator(s.median()).next(value<I32<[3], "clients">>(), perClient, {}));
// Through clip,dp they come out released, with the next clip; dp's inputs are required.
const dpNext = aggregator(s.clip(1), s.dp()).next(value<F32<[3], "clients-private">>(), privatePerClient, dpHypers);
expectAssignable<F32<[3], "server">>(dpNext.value);
expectType<{ clip: F32<[], "server"> }>(dpNext.state);
expectError(aggregator(s.clip(1), s.dp()).next(value<F32<[3], "clients-private">>(), privatePerClient, { key: value<I32<[2], "server">>() }));

// The round number is public: next() takes it local or at the SERVER (tracing folds either into the SERVER key).
const secureChain = aggregator(secureStage);
expectAssignable<F32<[3], "server">>(secureChain.next(value<F32<[3], "clients-private">>(), privatePerClient, { key: value<I32<[2], "server">>(), round: value<I32<[], "server">>() }).value);
expectAssignable<F32<[3], "server">>(secureChain.next(value<F32<[3], "clients-private">>(), privatePerClient, { key: value<I32<[2], "server">>(), round: value<I32<[]>>() }).value);
// A CLIENTS round cannot fold into the SERVER key: FT104 in the elaboration, as tracing says.
expectError(secureChain.next(value<F32<[3], "clients-private">>(), privatePerClient, { key: value<I32<[2], "server">>(), round: value<I32<[], "clients">>() }));
