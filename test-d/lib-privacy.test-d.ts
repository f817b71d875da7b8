/**
 * The library follows the language's privacy rule (docs/language.md "Privacy"): its typed
 * functions carry privacy through their types. A model's logits, a loss, local training, an
 * evaluation, an optimiser's init and update and a schedule computed from private data are
 * private; inside map() on private members they type-check as on any member (no false
 * rejection); a round function whose plain means would release private client data is FT109,
 * and FedAvg's under clip,dp (DP-FedAvg), whose only release is dpSum, takes private data.
 */
import { expectError, expectType } from "tsd";
import { add, broadcast, f32, grad, map, matmul, mul, reduceMean, reduceSum, sum, type Placement, type ReleasedServer, type Tensor } from "../dist/src/index.js";
import {
  adam,
  aggregationStages as stages,
  aggregator,
  applyUpdates,
  chain,
  clipByGlobalNorm,
  constantSchedule,
  cosineDecay,
  defineModel,
  evaluate,
  fedAvg,
  fedProx,
  joinSchedules,
  localTrain,
  logistic,
  maskedLoss,
  mime,
  scaffold,
  sgd,
  type Schedule,
} from "../dist/src/lib/index.js";
import { value, type F32, type I32 } from "./helpers.js";

type Logistic<P extends "server" | ReleasedServer | "clients" | "clients-private" | "member" | "member-private" | "local"> = { w: F32<[784, 10], P>; b: F32<[10], P> };
type Data<P extends "clients" | "clients-private"> = {
  x: F32<["S", "B", 784], P>;
  y: I32<["S", "B"], P>;
  mask: F32<["S", "B"], P>;
  count: F32<[], P>;
};

declare const serverParams: Logistic<"server">;
declare const privateData: Data<"clients-private">;
declare const publicData: Data<"clients">;
// One batch per client, for the per-batch functions (logits, maskedLoss).
declare const privateBatch: { x: F32<["B", 784], "clients-private">; y: I32<["B"], "clients-private">; mask: F32<["B"], "clients-private"> };

// ---- a model's logits: at the join of the parameters and the batch ------------------------------

expectType<F32<["B", 10], "member-private">>(logistic.logits(value<Logistic<"member">>(), value<F32<["B", 784], "member-private">>()));
expectType<F32<["B", 10], "member-private">>(logistic.logits(value<Logistic<"member-private">>(), value<F32<["B", 784], "member">>()));
expectType<F32<["B", 10], "member">>(logistic.logits(value<Logistic<"member">>(), value<F32<["B", 784], "member">>()));
expectType<F32<["B", 10], "local">>(logistic.logits(value<Logistic<"local">>(), value<F32<["B", 784], "local">>()));
expectType<F32<["B", 10], "server">>(logistic.logits(serverParams, value<F32<["B", 784], "local">>()));
// Inside map() on private members: private logits, private at the CLIENTS after it.
expectType<F32<["B", 10], "clients-private">>(map((w, x) => logistic.logits(w, x), broadcast(serverParams), privateBatch.x));
// SERVER parameters with a member batch cannot meet (FT102, as the model's first operation would say).
expectError(logistic.logits(serverParams, value<F32<["B", 784], "member">>()));
expectType<
  | "FT102: map() takes CLIENTS values, got f32[784,10]@SERVER: it is read inside map()'s function: broadcast it outside and pass it to map() as an argument (a reduction belongs outside map() too)"
  | "FT102: map() takes CLIENTS values, got f32[10]@SERVER: it is read inside map()'s function: broadcast it outside and pass it to map() as an argument (a reduction belongs outside map() too)"
>(
  value<Parameters<typeof logistic.logits<Logistic<"server">, F32<["B", 784], "member">>>[0]>(),
);

// A model is written on members (its body checked there) and used at every placement.
const specs = { w: f32([3, 2]), b: f32([2]) };
const small = defineModel<typeof specs, [3], 2>({
  name: "small",
  params: specs,
  inputShape: [3],
  classes: 2,
  logits: (p, x) => add(matmul(x, p.w), p.b),
  init: () => ({ w: { shape: [3, 2], data: new Float32Array(6) }, b: { shape: [2], data: new Float32Array(2) } }),
});
expectType<F32<["B", 2], "member-private">>(small.logits(value<{ w: F32<[3, 2], "member">; b: F32<[2], "member"> }>(), value<F32<["B", 3], "member-private">>()));
// A body that reduces across clients is FT105 on members, so it never reaches the other placements.
expectError(defineModel<typeof specs, [3], 2>({ ...small, logits: (p, x) => add(reduceSum(matmul(x, p.w)), p.b) }));
// Parameters of another model's tree.
expectError(small.logits(value<Logistic<"member">>(), value<F32<["B", 3], "member">>()));

// ---- losses: private data gives a private loss, and a plain mean of it is FT109 ----------------

const privateLosses = map((w, x, y, m) => maskedLoss(logistic, w, x, y, m), broadcast(serverParams), privateBatch.x, privateBatch.y, privateBatch.mask);
expectType<F32<[], "clients-private">>(privateLosses);
expectError(reduceMean(privateLosses));
expectError(reduceSum(privateLosses));
// The same loss on data that is not private may be averaged.
expectType<F32<[], "server">>(
  reduceMean(map((w, x, y, m) => maskedLoss(logistic, w, x, y, m), broadcast(serverParams), value<F32<["B", 784], "clients">>(), value<I32<["B"], "clients">>(), value<F32<["B"], "clients">>())),
);

// ---- local training and evaluation on private members --------------------------------------------

const trained = map(
  (w, x, y, mask) => localTrain(logistic, w, { x, y, mask }, (lr) => adam(lr), 0.1).params,
  broadcast(serverParams),
  privateData.x,
  privateData.y,
  privateData.mask,
);
expectType<Logistic<"clients-private">>(trained);
expectError(reduceMean(trained));
// A hook's result joins the training's placement: a private value it captures makes the trained parameters private.
const hooked = map(
  (w, x, y, mask, secret) => localTrain(logistic, w, { x, y, mask }, (lr) => sgd(lr), 0.1, { extra: (p) => mul(sum(p.b), secret) }).params,
  broadcast(serverParams),
  publicData.x,
  publicData.y,
  publicData.mask,
  privateData.count,
);
expectType<Logistic<"clients-private">>(hooked);
expectError(reduceMean(hooked));
expectType<Logistic<"clients">>(
  map((w, x, y, mask) => localTrain(logistic, w, { x, y, mask }, (lr) => sgd(lr), 0.1, { extra: (p) => mul(sum(p.b), 0.01) }).params, broadcast(serverParams), publicData.x, publicData.y, publicData.mask),
);
const metrics = map((w, x, y, mask) => evaluate(logistic, w, { x, y, mask }), broadcast(serverParams), privateData.x, privateData.y, privateData.mask);
expectType<{ accuracy: F32<[], "clients-private">; loss: F32<[], "clients-private"> }>(metrics);
expectError(reduceMean(metrics.accuracy));

// ---- optimisers: a step inside map() on private members -------------------------------------------

const stepped = map(
  (w, x, y, m) => {
    const g = grad((v: typeof w) => maskedLoss(logistic, v, x, y, m))(w);
    expectType<Logistic<"member-private">>(g);
    const optimizer = chain(clipByGlobalNorm(1), adam(cosineDecay(0.1, { decaySteps: 10 })));
    // The state starts from the (free) broadcast parameters; the private gradient makes the new state private.
    const state = optimizer.init(w);
    expectType<F32<[], "member">>(state[1].count);
    const [updates, next] = optimizer.update(g, state, w);
    expectType<Logistic<"member-private">>(updates);
    expectType<F32<[], "member-private">>(next[1].count);
    expectType<Logistic<"member-private">>(next[1].mu);
    return applyUpdates(w, updates);
  },
  broadcast(serverParams),
  privateBatch.x,
  privateBatch.y,
  privateBatch.mask,
);
expectType<Logistic<"clients-private">>(stepped);
expectError(reduceMean(stepped));
// init of private parameters gives a private state; update of private updates gives private updates.
expectType<{ count: F32<[], "member-private">; trace: Logistic<"member-private"> }>(sgd(0.1, { momentum: 0.9 }).init(value<Logistic<"member-private">>()));
expectType<Logistic<"clients-private">>(sgd(0.1).update(value<Logistic<"clients-private">>(), sgd(0.1).init(value<Logistic<"clients">>()))[0]);
// A state at the SERVER for updates at the CLIENTS still cannot meet.
expectError(adam(0.1).update(value<Logistic<"clients-private">>(), adam(0.1).init(serverParams)));
// The library's schedules are at their count's placement: a private count gives a private rate.
expectType<F32<[], "member-private">>(cosineDecay(0.1, { decaySteps: 10 })(value<F32<[], "member-private">>()));
expectType<F32<[], "member-private">>(joinSchedules([constantSchedule(0.1), cosineDecay(0.1, { decaySteps: 10 })], [5])(value<F32<[], "member-private">>()));
// A schedule a user writes has a placement not known statically (tracing checks it), and still drives an optimiser.
const userSchedule: Schedule = (count) => mul(add(count, 1), 0.1);
sgd(userSchedule);
sgd((count) => mul(count, 0.1));
expectType<Tensor<[], "float32", Placement>>(joinSchedules([userSchedule, constantSchedule(0.1)], [5])(value<F32<[], "member-private">>()));

// ---- round functions: FT109 where a plain mean would release private data -------------------------

const averaging = fedAvg(logistic);
expectType<{ params: Logistic<"server">; loss: F32<[], "server"> }>(averaging(serverParams, publicData, { lr: 0.1 }));
expectError(averaging(serverParams, privateData, { lr: 0.1 }));
expectType<
  | "FT109: fedAvg() would release private client data, got {f32[S,B,784]}@CLIENTS(private) at x: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER"
  | "FT109: fedAvg() would release private client data, got {i32[S,B]}@CLIENTS(private) at y: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER"
  | "FT109: fedAvg() would release private client data, got {f32[S,B]}@CLIENTS(private) at mask: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER"
  | "FT109: fedAvg() would release private client data, got {f32[]}@CLIENTS(private) at count: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER"
>(value<Parameters<typeof averaging<Logistic<"server">, Data<"clients-private">>>[1]>());
expectError(fedProx(logistic)(serverParams, privateData, { lr: 0.1, mu: 0.01 }));
expectError(mime(logistic, "mimelite")(serverParams, privateData, { lr: 0.1, serverLr: 1, state: { count: value<F32<[], "server">>(), trace: serverParams } }));
expectError(
  scaffold(logistic)(serverParams, { ...publicData, clientControls: value<Logistic<"clients-private">>() }, { lr: 0.1, serverLr: 1, control: serverParams }),
);
// FedAvg with secure releases only through secureSum (no loss): private data is its input too.
const secure = fedAvg(logistic, { aggregator: aggregator(stages.secure({ bits: 30, clip: 1, maxWeight: 600, maxClients: 10 })) });
// From private data the result is the release (ReleasedServer): no gradient reaches back through it.
expectType<{ params: Logistic<ReleasedServer> }>(secure(serverParams, privateData, { lr: 0.1, key: value<I32<[2], "server">>() }));
expectType<{ params: Logistic<"server"> }>(secure(serverParams, publicData, { lr: 0.1, key: value<I32<[2], "server">>() }));
expectError(secure(serverParams, privateData, { lr: 0.1, key: value<I32<[2], "clients">>() }));

// DP-FedAvg (FedAvg with clip,dp) releases only through dpSum: private data is its input.
const dpRound = fedAvg(logistic, { aggregator: aggregator(stages.clip(1), stages.dp()) });
const dpHypers = { lr: 0.1, clip: value<F32<[], "server">>(), noiseMultiplier: 1, expectedClients: 10, key: value<I32<[2], "server">>(), round: 0 };
expectType<{ params: Logistic<ReleasedServer>; clip: F32<[], ReleasedServer> }>(dpRound(serverParams, privateData, dpHypers));
// The gradient of a DP round with respect to the SERVER model is FT109 (broadcast()'s transpose sums the clients' private cotangents).
expectError(grad((w: Logistic<"server">) => sum(dpRound(w, privateData, dpHypers).params.b))(serverParams));
// Its key is the SERVER's.
expectError(dpRound(serverParams, privateData, { ...dpHypers, key: value<I32<[2], "clients">>() }));
expectError(dpRound(privateData.x, privateData, dpHypers));

