/**
 * Agnostic federated learning (Mohri, Sivek, Suresh 2019, "Agnostic Federated Learning",
 * Stochastic-AFL): min over w, max over mixture weights lambda on the simplex, of
 * sum_k lambda_k L_k(w), with one domain per client: lambda has one entry per client of the
 * whole population (N = `clients`) and lives at the SERVER across rounds. Each round both
 * players step from the same (w, lambda), with the cohort S standing for all N clients
 * (unbiased estimates, m = the clients of S that trained):
 *   w      <- w + (N / m) sum_{k in S} lambda_k (w_k - w)       w_k: client k's locally trained model
 *   lambda <- Proj_simplex(lambda + aflLr (N / m) sum_{k in S} L_k(w) e_k)
 * where L_k(w) is client k's mean loss at the server model before training. With one local
 * step on the client's whole data, w_k - w = -lr grad L_k(w) and the w step is the paper's
 * projected gradient descent step; with more, it is FedAvg's local training, weighted by
 * lambda. Uniform lambda = 1/N gives FedAvg with every client weighted alike.
 *
 * The cohort's clients are named by a CLIENTS input `client` (their positions 0..N-1), from
 * which each client picks its lambda_k and places its loss in the ascent direction.
 */
import { ftError } from "../../errors/error.js";
import { cumsum, sort } from "../../front/sequence-ops.js";
import { atClients, atServer, f32, i32 } from "../../front/specs.js";
import type { Placement, Tensor, TensorSpec } from "../../../types/tensor.js";
import { CheckedProgram, valuesOf } from "./checked-inputs.js";
import { aggregate } from "../aggregators/aggregate.js";
import { aggregatedRoundProgram, aggregatorIn, requireAggregator, type AggregatorOptions } from "./aggregation.js";
import { clientDelta, clientLoss, realSteps, type ClientTrainingOptions } from "./local.js";
import { ops, type Value } from "./loose.js";
import type { AnyModel, Hyper, RoundData, RoundFunction, RoundOutputs, RoundProgram, ScalarSpec, ServerScalar } from "./types.js";

/**
 * aflProgram's options: the number of clients (each is one domain of the mixture), the clients'
 * optimiser and the aggregator.
 *
 * @example
 * const round = aflProgram(logistic, { clients: 10 } satisfies AflOptions);
 */
export interface AflOptions extends ClientTrainingOptions, AggregatorOptions {
  /** N: the number of clients (domains) lambda weighs; the `client` input names them 0..N-1. */
  readonly clients: number;
}

/**
 * AFL's per-round values: the clients' learning rate, the mixture weights' learning rate and the
 * weights lambda.
 *
 * @example
 * import { atClients, atServer, f32, i32, program } from "fedtensor";
 * import { afl, clientBatchSpecs, logistic, serverParamSpecs, type AflHypers, type AflLambda } from "fedtensor/lib";
 * const inputs = { params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), lambda: atServer(f32([2])), client: atClients(i32([])) };
 * const round = program(inputs, ({ params, lr, lambda, ...data }) => {
 *   const hypers: AflHypers<AflLambda<2>> = { lr, aflLr: 0.1, lambda };
 *   return afl(logistic, { clients: 2 })(params, data, hypers);
 * });
 */
export interface AflHypers<Lambda> {
  /** The clients' learning rate. */
  readonly lr: Hyper;
  /** The step size of the ascent on lambda (the paper's gamma_lambda). */
  readonly aflLr: Hyper;
  /** The mixture weights, f32[N] at the SERVER, on the simplex. */
  readonly lambda: Lambda;
}

/**
 * AFL's client data: the cohort's batches and each client's position among the N.
 *
 * @example
 * import { atClients, i32 } from "fedtensor";
 * import { clientBatchSpecs, logistic, type AflClientData } from "fedtensor/lib";
 * const data: AflClientData = { ...clientBatchSpecs(logistic), client: atClients(i32([])) };
 */
export interface AflClientData extends RoundData {
  readonly client: Tensor<[], "int32", "clients">;
}

/**
 * AFL's mixture weights over N clients: an f32[N] at the SERVER on the simplex.
 *
 * @example
 * const lambda: HostParam = initialLambda(10); // 10 clients, uniform weights
 */
export type AflLambda<N extends number> = Tensor<[N], "float32", "server">;
/**
 * AFL's round program: FedAvg's inputs plus the weights' learning rate, lambda and each client's
 * index.
 *
 * @example
 * const round: AflProgram<typeof logistic, 10> = aflProgram(logistic, { clients: 10 });
 */
export type AflProgram<M extends AnyModel, N extends number = number> = RoundProgram<
  M,
  { readonly aflLr: ScalarSpec; readonly lambda: TensorSpec<[N], "float32", "server">; readonly client: TensorSpec<[], "int32", "clients"> },
  { lambda: AflLambda<N>; worstLoss: ServerScalar }
>;

/**
 * The Euclidean projection of v onto the probability simplex (Duchi, Shalev-Shwartz, Singer,
 * Chandra 2008): with u = v sorted in descending order, rho the number of j with
 * u_j - (u_1 + ... + u_j - 1) / j > 0 (they are a prefix) and theta = (u_1 + ... + u_rho - 1) / rho,
 * the projection is max(v - theta, 0).
 *
 * @example
 * import { atServer, f32, program } from "fedtensor";
 * import { projectToSimplex } from "fedtensor/lib";
 * const project = program({ v: atServer(f32([3])) }, ({ v }) => projectToSimplex(v, 3));
 * const weights = await project.run({ v: { shape: [3], data: Float32Array.of(0.5, 0.9, -0.2) } });
 * console.log(await weights.data()); // Float32Array [0.3, 0.7, 0]: the nearest weights summing to 1
 */
export function projectToSimplex<const N extends number, P extends Placement>(v: Tensor<[N], "float32", P>, n: N): Tensor<[N], "float32", P>;
export function projectToSimplex(v: Value, n: number): Value {
  const u: Value = sort(v, -1 as never, true);
  const ranks = ops.constant(Array.from({ length: n }, (_, j) => j + 1));
  const kept = ops.cast(ops.greater(ops.sub(u, ops.div(ops.sub(cumsum(u), 1), ranks)), 0), "float32");
  const theta = ops.div(ops.sub(ops.sum(ops.mul(kept, u)), 1), ops.sum(kept));
  return ops.maximum(ops.sub(v, theta), 0);
}

/**
 * AFL's round as a typed function on traced values, for use inside a user's program.
 *
 * @example
 * import { atClients, atServer, f32, i32, program } from "fedtensor";
 * import { afl, clientBatchSpecs, logistic, serverParamSpecs } from "fedtensor/lib";
 * const step = afl(logistic, { clients: 4 });
 * const inputs = { params: serverParamSpecs(logistic), ...clientBatchSpecs(logistic), lr: f32([]), lambda: atServer(f32([4])), client: atClients(i32([])) };
 * const round = program(inputs, ({ params, lr, lambda, ...data }) => step(params, data, { lr, aflLr: 0.1, lambda })); // { params, loss, lambda, worstLoss }
 */
export function afl<M extends AnyModel, const N extends number>(
  model: M,
  options: AflOptions & { readonly clients: N },
): RoundFunction<AflHypers<AflLambda<N>>, RoundOutputs<M> & { lambda: AflLambda<N>; worstLoss: ServerScalar }, AflClientData, "afl"> {
  return ((params: Value, data: AflClientData, hypers: AflHypers<Value>) => aflRound(model, options, params, data, hypers, hypers)) as never;
}

/** One AFL round on traced values. */
export function aflRound(model: AnyModel, options: AflOptions, params: Value, data: AflClientData, hypers: AflHypers<Value>, inputs: Value = {}): Record<string, Value> {
  requireAggregator("afl", options);
  const { lr, aflLr, lambda } = hypers;
  const n = options.clients;
  const local = ops.map(
    (w: Value, weights: Value, client: Value, x: Value, y: Value, mask: Value) => {
      const domain = ops.oneHot(client, n);
      const trains = ops.cast(ops.greater(realSteps(mask), 0), "float32");
      const before = ops.mul(clientLoss(model, w, x, y, mask), trains);
      const trained = clientDelta(model, w, { x, y, mask }, lr, options);
      const weight = ops.mul(ops.sum(ops.mul(domain, weights)), trains);
      return { weighted: ops.mul(trained.delta, weight), ascent: ops.mul(domain, before), before, trains, loss: trained.loss };
    },
    ops.broadcast(params),
    ops.broadcast(lambda),
    data.client,
    data.x,
    data.y,
    data.mask,
  );
  const scale = ops.div(n, ops.reduceSum(local.trains));
  // (N / m) sum_k lambda_k delta_k is N times the mean of lambda_k delta_k over the m clients that trained.
  const { value, state } = aggregate(aggregatorIn(options), { updates: local.weighted, data, weights: local.trains }, inputs);
  return {
    params: ops.add(params, ops.mul(value, n)),
    ...state,
    loss: ops.reduceWeightedMean(local.loss, data.count),
    lambda: projectToSimplex(ops.add(lambda, ops.mul(ops.reduceSum(local.ascent), ops.mul(scale, aflLr))), n),
    worstLoss: ops.reduceMax(local.before),
  };
}

/** FT302 unless every client position is an integer in [0, N): one outside would get no weight, silently. */
async function checkClients(client: unknown, n: number, what: string): Promise<void> {
  const values = await valuesOf(client);
  if (values === undefined) return; // malformed: the runtime's FT302 says what is wrong
  for (let i = 0; i < values.length; i++) {
    const k = values[i]!;
    if (!(Number.isInteger(k) && k >= 0 && k < n)) throw ftError("FT302", { what, why: `client ${i}'s position ${k} is not one of the ${n} clients 0..${n - 1}` });
  }
}

/**
 * AFL's round as a program: (server params, cohort batches, lr, aflLr, lambda, client) ->
 * (params, loss, lambda, worstLoss); lambda starts uniform, 1/N each (initialLambda).
 * worstLoss is the largest loss at the server model among the cohort's clients that trained.
 *
 * @example
 * import { aflProgram, initialLambda, logistic } from "fedtensor/lib";
 * const round = aflProgram(logistic, { clients: 10 }); // takes each client's number 0..9 as `client`
 * const lambda = initialLambda(10); // uniform weights, the first round's lambda
 */
export function aflProgram<M extends AnyModel, const N extends number>(model: M, options: AflOptions & { readonly clients: N }): AflProgram<M, N> {
  const n = options.clients;
  if (!(Number.isSafeInteger(n) && n >= 1)) throw ftError("FT302", { what: "aflProgram clients", why: `must be a whole number of clients >= 1, got ${n}` });
  const extra = { aflLr: f32([]), lambda: atServer(f32([n])), client: atClients(i32([])) };
  const traced = aggregatedRoundProgram(model, "afl", extra, (all: Value, data) => aflRound(model, options, all.params, { ...data, client: all.client }, all, all), options);
  // The client positions are checked as well as the data before it runs.
  const check = (inputs: unknown, name: string) => checkClients((inputs as { client?: unknown } | null)?.client, n, `${name} input client`);
  return new CheckedProgram(traced as CheckedProgram<unknown, unknown>, model, check) as never;
}

/**
 * The first round's lambda: uniform over the N clients.
 *
 * @example
 * import { initialLambda } from "fedtensor/lib";
 * console.log(initialLambda(4)); // { shape: [4], data: Float32Array [0.25, 0.25, 0.25, 0.25] }
 */
export function initialLambda(clients: number): { shape: number[]; data: Float32Array } {
  return { shape: [clients], data: new Float32Array(clients).fill(1 / clients) };
}
