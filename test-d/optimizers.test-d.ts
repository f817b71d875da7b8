/**
 * The optimisers' static types: init takes a parameter tree and gives a state of the same
 * placement (the step count a scalar there, moments shaped like the tree); update takes
 * updates and a state for that same tree and gives the same tree back, at the same placement,
 * with the same state. A state for another tree or placement is a type error.
 */
import { expectError, expectType } from "tsd";
import { atServer, broadcast, map, program, type Program } from "../dist/src/index.js";
import {
  adam,
  applyUpdates,
  adamw,
  chain,
  clipByGlobalNorm,
  cosineDecay,
  fedAvgMProgram,
  fedAvgProgram,
  logistic,
  rmsprop,
  sgd,
  type GradientTransformation,
  type OptimizerState,
} from "../dist/src/lib/index.js";
import { value, type F32 } from "./helpers.js";

type Place = "server" | "clients" | "clients-equal" | "member" | "local";
type OutputsOf<P> = P extends Program<infer _I, infer O> ? O : never;
type Logistic<P extends Place> = { w: F32<[784, 10], P>; b: F32<[10], P> };
type Count<P extends Place> = F32<[], P>;

declare const server: Logistic<"server">;
declare const clients: Logistic<"clients">;
declare const local: Logistic<"local">;

// ---- init: the state of the tree given, at its placement -------------------------------------

expectType<{ count: Count<"local"> }>(sgd(0.1).init(local));
expectType<{ count: Count<"server">; trace: Logistic<"server"> }>(sgd(0.1, { momentum: 0.9 }).init(server));
expectType<{ count: Count<"server">; mu: Logistic<"server">; nu: Logistic<"server"> }>(adam(0.1).init(server));
expectType<{ count: Count<"clients">; mu: Logistic<"clients">; nu: Logistic<"clients"> }>(rmsprop(0.1).init(clients));
expectType<OptimizerState<"moments", Logistic<"server">>>(adamw(cosineDecay(0.1, { decaySteps: 10 })).init(server));

// ---- update: the same tree out, the same state ------------------------------------------------

const optimizer = adam(0.1);
const state = optimizer.init(server);
expectType<[Logistic<"server">, typeof state]>(optimizer.update(server, state, server));
expectType<Logistic<"clients">>(optimizer.update(clients, optimizer.init(clients))[0]);
expectType<Logistic<"server">>(applyUpdates(server, optimizer.update(server, state)[0]));

// A state made for another placement, or another tree.
expectError(optimizer.update(server, optimizer.init(clients)));
expectError(optimizer.update(server, optimizer.init({ w: server.w })));
// A momentum state where Adam's goes.
expectError(optimizer.update(server, sgd(0.1, { momentum: 0.9 }).init(server)));

// ---- chain: a tuple of the parts' states ------------------------------------------------------

const clipped = chain(clipByGlobalNorm(1), adam(0.1));
expectType<GradientTransformation<readonly ["empty", "moments"]>>(clipped);
expectType<[{ readonly [key: string]: never }, { count: Count<"server">; mu: Logistic<"server">; nu: Logistic<"server"> }]>(clipped.init(server));
expectType<Logistic<"server">>(clipped.update(server, clipped.init(server), server)[0]);

// ---- in programs: at the SERVER, and inside map's function on local members --------------------

const serverStep = program({ params: atServer(logistic.params), g: atServer(logistic.params) }, ({ params, g }) => {
  const momentum = sgd(0.1, { momentum: 0.9 });
  const [updates, next] = momentum.update(g, momentum.init(params), params);
  return { params: applyUpdates(params, updates), state: next };
});
expectType<Logistic<"server">>(value<OutputsOf<typeof serverStep>["params"]>());
expectType<{ count: Count<"server">; trace: Logistic<"server"> }>(value<OutputsOf<typeof serverStep>["state"]>());

const clientSteps = program({ params: atServer(logistic.params) }, ({ params }) =>
  map((w) => {
    const inner = adam(0.01);
    const [updates] = inner.update(w, inner.init(w), w);
    return applyUpdates(w, updates);
  }, broadcast(params)),
);
// Every client starts from the same broadcast parameters, so the results are known equal.
expectType<Logistic<"clients-equal">>(value<OutputsOf<typeof clientSteps>>());

// ---- the algorithms take a client optimiser made from the learning rate ------------------------

fedAvgProgram(logistic, { clientOptimizer: (lr) => chain(clipByGlobalNorm(1), adam(lr)) });
fedAvgMProgram(logistic, { momentum: 0.9, clientOptimizer: (lr) => sgd(lr, { momentum: 0.5, nesterov: true }) });
// The learning rate is a local scalar: not a string, and the factory must make an optimiser.
expectError(fedAvgProgram(logistic, { clientOptimizer: (lr: string) => adam(Number(lr)) }));
expectError(fedAvgProgram(logistic, { clientOptimizer: () => 0.1 }));
expectError(sgd("0.1"));
