/**
 * The algorithm library's entry points: each program's inputs and outputs as run() and the
 * program's static types give them, and the typed round functions used inside a user's
 * program, where misuse fails with the FT code the same mistake would raise inside the round:
 * client data where the server parameters go (FT101: the round broadcasts them), SERVER
 * values where client data goes (FT102: the round maps over it), a round inside map (FT105).
 */
import type { Tensor as TfTensor } from "@tensorflow/tfjs";
import { expectError, expectType } from "tsd";
import { atClients, atServer, broadcast, f32, i32, map, program, reduceSum, type Program, type TensorSpec } from "../dist/src/index.js";
import {
  aggregationStages as stages,
  aggregator,
  characterModel,
  cnn,
  diloco,
  dilocoProgram,
  evaluationProgram,
  fedAvg,
  fedAvgProgram,
  federatedHistogramProgram,
  federatedMeanProgram,
  fedOpt,
  fedOptProgram,
  fedProx,
  fedProxProgram,
  fedSgd,
  fedSgdProgram,
  logistic,
  mlp2nn,
  scaffold,
  scaffoldProgram,
  type RoundProgram,
} from "../dist/src/lib/index.js";
import { value, type F32, type I32 } from "./helpers.js";
import { adam as adamOptimizer, afl, aflProgram, mime, mimeProgram, qffl, qfflProgram } from "../dist/src/lib/index.js";

type InputsOf<P> = P extends Program<infer I, unknown> ? I : never;
type OutputsOf<P> = P extends Program<infer _I, infer O> ? O : never;
type RunInputsOf<P extends { run: (...args: never[]) => unknown }> = Parameters<P["run"]>[0];
type RunOutputsOf<P extends { run: (...args: never[]) => unknown }> = Awaited<ReturnType<P["run"]>>;

type Logistic<P extends "server" | "clients" | "member"> = { w: F32<[784, 10], P>; b: F32<[10], P> };
type LogisticTensors = { w: TfTensor; b: TfTensor };
type Mlp<P extends "server" | "clients"> = {
  w1: F32<[784, 200], P>;
  b1: F32<[200], P>;
  w2: F32<[200, 200], P>;
  b2: F32<[200], P>;
  w3: F32<[200, 10], P>;
  b3: F32<[10], P>;
};
type MlpTensors = { w1: TfTensor; b1: TfTensor; w2: TfTensor; b2: TfTensor; w3: TfTensor; b3: TfTensor };
type Round<M> = { params: M; loss: F32<[], "server"> };

// ---- the programs: inputs and outputs ------------------------------------------------------

const avg = fedAvgProgram(logistic);
expectType<RoundProgram<typeof logistic>>(avg);
expectType<"params" | "x" | "y" | "mask" | "count" | "lr">(value<keyof RunInputsOf<typeof avg>>());
expectType<TensorSpec<["S", "B", 784], "float32", "clients">>(value<InputsOf<typeof avg>["x"]>());
expectType<{ params: LogisticTensors; loss: TfTensor }>(value<RunOutputsOf<typeof avg>>());
expectType<Round<Logistic<"server">>>(value<OutputsOf<typeof avg>>());

expectType<Round<Logistic<"server">>>(value<OutputsOf<ReturnType<typeof fedSgdProgram<typeof logistic>>>>());
const prox = fedProxProgram(mlp2nn);
expectType<"params" | "x" | "y" | "mask" | "count" | "lr" | "mu">(value<keyof RunInputsOf<typeof prox>>());
expectType<Round<Mlp<"server">>>(value<OutputsOf<typeof prox>>());

const adam = fedOptProgram(mlp2nn, { optimizer: "adam" });
expectType<"params" | "x" | "y" | "mask" | "count" | "lr" | "serverLr" | "state">(value<keyof RunInputsOf<typeof adam>>());
expectType<{ m: Mlp<"server">; v: Mlp<"server"> }>(value<OutputsOf<typeof adam>["state"]>());
expectType<{ params: MlpTensors; loss: TfTensor; state: { m: MlpTensors; v: MlpTensors } }>(value<RunOutputsOf<typeof adam>>());
// The optimiser is one of the three of Reddi et al.
expectError(fedOptProgram(mlp2nn, { optimizer: "sgd" }));

const scaffolded = scaffoldProgram(logistic, { participation: 0.1 });
expectType<TensorSpec<[784, 10], "float32", "server">>(value<InputsOf<typeof scaffolded>["control"]["w"]>());
// The clients' control variates are a CLIENTS input and output: one tree per client.
expectType<TensorSpec<[784, 10], "float32", "clients">>(value<InputsOf<typeof scaffolded>["clientControls"]["w"]>());
expectType<Round<Logistic<"server">> & { control: Logistic<"server">; clientControls: Logistic<"clients"> }>(
  value<OutputsOf<typeof scaffolded>>(),
);
expectType<{ params: LogisticTensors; loss: TfTensor; control: LogisticTensors; clientControls: LogisticTensors }>(
  value<RunOutputsOf<typeof scaffolded>>(),
);

const outer = dilocoProgram(cnn, { momentum: 0.8 });
expectType<"params" | "x" | "y" | "mask" | "count" | "lr" | "serverLr" | "buffer">(value<keyof RunInputsOf<typeof outer>>());
expectType<F32<[5, 5, 32, 64], "server">>(value<OutputsOf<typeof outer>["buffer"]["conv2"]>());

// DP-FedAvg (FedAvg with clip,dp): the clip and the noise key at the SERVER; the next clip
// comes back there. Its client data is private (FedAvg's is not), and it reports no training loss.
const dp = fedAvgProgram(logistic, { aggregator: aggregator(stages.clip("adaptive"), stages.dp()) });
expectType<TensorSpec<[], "float32", "server">>(value<InputsOf<typeof dp>["clip"]>());
expectType<TensorSpec<[2], "int32", "server">>(value<InputsOf<typeof dp>["key"]>());
expectType<TensorSpec<["S", "B", 784], "float32", "clients-private">>(value<InputsOf<typeof dp>["x"]>());
expectType<TensorSpec<["S", "B", 784], "float32", "clients">>(value<InputsOf<ReturnType<typeof fedAvgProgram<typeof logistic>>>["x"]>());
expectType<{ params: Logistic<"server">; clip: F32<[], "server"> }>(value<OutputsOf<typeof dp>>());
expectType<{ params: LogisticTensors; clip: TfTensor }>(value<RunOutputsOf<typeof dp>>());

// The character model's features are int32 character ids.
const characters = fedAvgProgram(characterModel({ sequenceLength: 12 }));
expectType<TensorSpec<["S", "B", 12], "int32", "clients">>(value<InputsOf<typeof characters>["x"]>());

const evaluation = evaluationProgram(cnn);
expectType<TensorSpec<[5, 5, 1, 32], "float32", "local">>(value<InputsOf<typeof evaluation>["params"]["conv1"]>());
expectType<TensorSpec<["S", "B", 784], "float32", "local">>(value<InputsOf<typeof evaluation>["x"]>());
expectType<{ accuracy: F32<[]>; loss: F32<[]> }>(value<OutputsOf<typeof evaluation>>());

expectType<F32<[3], "server">>(value<OutputsOf<ReturnType<typeof federatedMeanProgram<[3]>>>>());
expectType<TensorSpec<[3], "float32", "clients">>(value<InputsOf<ReturnType<typeof federatedMeanProgram<[3]>>>["value"]>());
const histogram = federatedHistogramProgram(10);
expectType<F32<[10], "server">>(value<OutputsOf<typeof histogram>>());
expectType<TensorSpec<["N"], "int32", "clients">>(value<InputsOf<typeof histogram>["values"]>());

// ---- the round functions inside a user's program -------------------------------------------

const inputs = {
  params: atServer(logistic.params),
  x: atClients(f32(["S", "B", 784])),
  y: atClients(i32(["S", "B"])),
  mask: atClients(f32(["S", "B"])),
  count: atClients(f32([])),
};

expectType<Program<typeof inputs, Round<Logistic<"server">>>>(
  program(inputs, ({ params, x, y, mask, count }) => fedAvg(logistic)(params, { x, y, mask, count }, { lr: 0.1 })),
);
// The client data as the server parameters.
expectError(program(inputs, ({ x, y, mask, count }) => fedAvg(logistic)(x, { x, y, mask, count }, { lr: 0.1 })));
// The count summed at the server first.
expectError(program(inputs, ({ params, x, y, mask, count }) => fedProx(logistic)(params, { x, y, mask, count: reduceSum(count) }, { lr: 0.1, mu: 0.01 })));
// A round inside the per-client function.
expectError(
  program(inputs, ({ params, x, y, mask, count }) =>
    map((p, xm, ym, mm, cm) => fedSgd(logistic)(p, { x: xm, y: ym, mask: mm, count: cm }, { lr: 0.1 }), broadcast(params), x, y, mask, count),
  ),
);

// The same mistakes carry the FT code and text of the check that fails.
declare const serverParams: Logistic<"server">;
declare const clientData: {
  x: F32<["S", "B", 784], "clients">;
  y: I32<["S", "B"], "clients">;
  mask: F32<["S", "B"], "clients">;
  count: F32<[], "clients">;
};
type ServerCount = Omit<typeof clientData, "count"> & { count: F32<[], "server"> };
type MemberData = { x: F32<["S", "B", 784], "member">; y: I32<["S", "B"], "member">; mask: F32<["S", "B"], "member">; count: F32<[], "member"> };

const averaging = fedAvg(logistic);
expectType<Round<Logistic<"server">>>(averaging(serverParams, clientData, { lr: 0.1 }));
expectError(averaging(clientData.x, clientData, { lr: 0.1 }));
expectType<"FT101: broadcast() takes a SERVER value, got {f32[S,B,784]}@CLIENTS">(
  value<Parameters<typeof averaging<F32<["S", "B", 784], "clients">, typeof clientData>>[0]>(),
);
expectError(averaging(serverParams, value<ServerCount>(), { lr: 0.1 }));
// The data must hold the whole cohort's batches.
expectError(averaging(serverParams, { x: clientData.x, y: clientData.y, mask: clientData.mask }, { lr: 0.1 }));
expectType<"FT102: map() takes CLIENTS values, got f32[]@SERVER at count: broadcast it first">(
  value<Parameters<typeof averaging<Logistic<"server">, ServerCount>>[1]>(),
);
expectError(averaging(value<Logistic<"member">>(), value<MemberData>(), { lr: 0.1 }));
expectType<"FT105: broadcast() inside a per-client function: its values are local members there">(
  value<Parameters<typeof averaging<Logistic<"member">, MemberData>>[0]>(),
);
expectType<"FT105: map() inside a per-client function: its values are local members there">(
  value<Parameters<typeof averaging<Logistic<"member">, MemberData>>[1]>(),
);

// Every algorithm's round function checks the same way.
const adaptive = fedOpt(logistic, { optimizer: "yogi" });
const state = { m: serverParams, v: serverParams };
expectType<Round<Logistic<"server">> & { state: { m: Logistic<"server">; v: Logistic<"server"> } }>(
  adaptive(serverParams, clientData, { lr: 0.1, serverLr: 0.01, state }),
);
expectError(adaptive(clientData.x, clientData, { lr: 0.1, serverLr: 0.01, state }));
// The optimiser state must be at the SERVER.
expectError(adaptive(serverParams, clientData, { lr: 0.1, serverLr: 0.01, state: { m: value<Logistic<"clients">>(), v: serverParams } }));

const drift = scaffold(logistic);
const controls = value<Logistic<"clients">>();
expectType<Round<Logistic<"server">> & { control: Logistic<"server">; clientControls: Logistic<"clients"> }>(
  drift(serverParams, { ...clientData, clientControls: controls }, { lr: 0.1, serverLr: 1, control: serverParams }),
);
// The clients' control variates missing from the data.
expectError(drift(serverParams, clientData, { lr: 0.1, serverLr: 1, control: serverParams }));
// The server control variate passed with the client data.
expectError(drift(serverParams, { ...clientData, clientControls: serverParams }, { lr: 0.1, serverLr: 1, control: serverParams }));
// One message for each misplaced leaf.
expectType<
  | "FT102: map() takes CLIENTS values, got f32[784,10]@SERVER at clientControls.w: broadcast it first"
  | "FT102: map() takes CLIENTS values, got f32[10]@SERVER at clientControls.b: broadcast it first"
>(
  value<Parameters<typeof drift<Logistic<"server">, typeof clientData & { clientControls: Logistic<"server"> }>>[1]>(),
);

const momentum = diloco(logistic);
expectType<Round<Logistic<"server">> & { buffer: Logistic<"server"> }>(
  momentum(serverParams, clientData, { lr: 0.1, serverLr: 0.7, buffer: serverParams }),
);
expectError(momentum(clientData, clientData, { lr: 0.1, serverLr: 0.7, buffer: serverParams }));

// ---- Mime and MimeLite, q-FFL, agnostic FL ---------------------------------------------------

// Mime's server state is its base optimiser's: SGD with momentum by default (a step count and a trace).
const mimeRound = mimeProgram(logistic, "mime");
expectType<"params" | "x" | "y" | "mask" | "count" | "lr" | "serverLr" | "state">(value<keyof RunInputsOf<typeof mimeRound>>());
expectType<TensorSpec<[], "float32", "server">>(value<InputsOf<typeof mimeRound>["state"]["count"]>());
expectType<TensorSpec<[784, 10], "float32", "server">>(value<InputsOf<typeof mimeRound>["state"]["trace"]["w"]>());
expectType<Round<Logistic<"server">> & { state: { count: F32<[], "server">; trace: Logistic<"server"> } }>(value<OutputsOf<typeof mimeRound>>());
// With Adam as the base, the state holds Adam's moments.
const mimeAdam = mimeProgram(mlp2nn, "mimelite", { baseOptimizer: (lr) => adamOptimizer(lr) });
expectType<{ count: F32<[], "server">; mu: Mlp<"server">; nu: Mlp<"server"> }>(value<OutputsOf<typeof mimeAdam>["state"]>());
expectError(mimeProgram(logistic, "mimeplus"));

const mimeLite = mime(logistic, "mimelite");
const mimeState = { count: value<F32<[], "server">>(), trace: serverParams };
expectType<Round<Logistic<"server">> & { state: { count: F32<[], "server">; trace: Logistic<"server"> } }>(
  mimeLite(serverParams, clientData, { lr: 0.1, serverLr: 1, state: mimeState }),
);
// The base optimiser's state must be at the SERVER, with the parameters' tree.
expectError(mimeLite(serverParams, clientData, { lr: 0.1, serverLr: 1, state: { count: value<F32<[], "server">>(), trace: value<Logistic<"clients">>() } }));
expectError(mimeLite(serverParams, clientData, { lr: 0.1, serverLr: 1, state: { count: value<F32<[], "server">>(), trace: { w: serverParams.w } } }));
expectError(mimeLite(clientData.x, clientData, { lr: 0.1, serverLr: 1, state: mimeState }));

const fair = qfflProgram(logistic);
expectType<"params" | "x" | "y" | "mask" | "count" | "lr" | "q">(value<keyof RunInputsOf<typeof fair>>());
expectType<{ params: LogisticTensors; loss: TfTensor }>(value<RunOutputsOf<typeof fair>>());
expectType<Round<Logistic<"server">>>(qffl(logistic)(serverParams, clientData, { lr: 0.1, q: 1 }));
expectError(qffl(logistic)(serverParams, clientData, { lr: 0.1 }));
expectError(qffl(logistic)(serverParams, value<ServerCount>(), { lr: 0.1, q: 1 }));

// AFL's lambda has one entry per client of the population, at the SERVER; the cohort's positions are a CLIENTS input.
const agnostic = aflProgram(logistic, { clients: 100 });
expectType<TensorSpec<[100], "float32", "server">>(value<InputsOf<typeof agnostic>["lambda"]>());
expectType<TensorSpec<[], "int32", "clients">>(value<InputsOf<typeof agnostic>["client"]>());
expectType<Round<Logistic<"server">> & { lambda: F32<[100], "server">; worstLoss: F32<[], "server"> }>(value<OutputsOf<typeof agnostic>>());
expectType<{ params: LogisticTensors; loss: TfTensor; lambda: TfTensor; worstLoss: TfTensor }>(value<RunOutputsOf<typeof agnostic>>());

const minimax = afl(logistic, { clients: 100 });
const positions = value<I32<[], "clients">>();
const lambda = value<F32<[100], "server">>();
expectType<Round<Logistic<"server">> & { lambda: F32<[100], "server">; worstLoss: F32<[], "server"> }>(
  minimax(serverParams, { ...clientData, client: positions }, { lr: 0.1, aflLr: 0.01, lambda }),
);
// The positions missing from the data, or given at the server.
expectError(minimax(serverParams, clientData, { lr: 0.1, aflLr: 0.01, lambda }));
expectError(minimax(serverParams, { ...clientData, client: value<I32<[], "server">>() }, { lr: 0.1, aflLr: 0.01, lambda }));
// lambda at the clients, or of another number of clients.
expectError(minimax(serverParams, { ...clientData, client: positions }, { lr: 0.1, aflLr: 0.01, lambda: value<F32<[100], "clients">>() }));
expectError(minimax(serverParams, { ...clientData, client: positions }, { lr: 0.1, aflLr: 0.01, lambda: value<F32<[10], "server">>() }));

