/**
 * The server optimisers of FedOpt, FedAvgM and DiLoCo, made from the library's optimisers
 * (src/lib/optimizers), and their state as the round programs keep it at the SERVER, carried
 * by the caller from round to round. The programs keep the papers' state (moments m and v, a
 * momentum buffer) without a step count: these rules neither correct bias nor follow a
 * schedule, so the count would be a dead input.
 */
import type { HostParams } from "../models/model.js";
import { adagrad, adam, sgd, yogi } from "../optimizers/optimizers.js";
import { applyUpdates, type LooseTransformation } from "../optimizers/transform.js";
import { ops, type Value } from "./loose.js";
import { zeroScalarLike } from "./trees.js";

/**
 * An adaptive server optimiser of FedOpt (Reddi et al. 2021): adam, yogi or adagrad.
 *
 * @example
 * const optimizer: AdaptiveOptimizer = "yogi";
 * const round = fedOptProgram(logistic, { optimizer });
 */
export type AdaptiveOptimizer = "adam" | "yogi" | "adagrad";

/**
 * An adaptive server optimiser's options: beta1, beta2 and the adaptivity tau.
 *
 * @example
 * const round = fedOptProgram(logistic, { optimizer: "adam", beta1: 0.9, beta2: 0.99, tau: 1e-3 });
 */
export interface AdaptiveOptions {
  /** Momentum of the first moment m (default 0.9). */
  readonly beta1?: number;
  /** Decay of the second moment v, for Adam and Yogi (default 0.99). */
  readonly beta2?: number;
  /** Adaptivity: added to sqrt(v) before dividing (default 1e-3). */
  readonly tau?: number;
}

/**
 * The adaptive server optimisers' defaults from Reddi et al. 2021: beta1 0.9, beta2 0.99, tau
 * 1e-3.
 *
 * @example
 * const state = initialAdaptiveState(logistic.init(Rng.fromSeed(0)), adaptiveDefaults.tau);
 */
export const adaptiveDefaults = { beta1: 0.9, beta2: 0.99, tau: 1e-3 } as const;

/**
 * An adaptive optimiser's state: first and second moments, each shaped like the parameters.
 *
 * @example
 * import { initialAdaptiveState, logistic, Rng, type AdaptiveState, type HostParams, type LogisticParams } from "fedtensor/lib";
 * const state: AdaptiveState<HostParams<LogisticParams>> = initialAdaptiveState(logistic.init(Rng.fromSeed(0)));
 */
export interface AdaptiveState<T> {
  m: T;
  v: T;
}

/**
 * One step of Reddi et al. 2021, Algorithm 2 (no bias correction), along the mean delta
 * (the negated pseudo-gradient):
 *   m = beta1 m + (1 - beta1) delta
 *   v = beta2 v + (1 - beta2) delta^2                       (Adam)
 *   v = v - (1 - beta2) delta^2 sign(v - delta^2)           (Yogi)
 *   v = v + delta^2                                         (Adagrad)
 *   params = params + lr m / (sqrt(v) + tau)
 * The library's adam, yogi and adagrad with these settings, fed the delta: their rules are odd
 * in their input, so the moments keep the paper's sign and the step is minus their update.
 */
export function adaptiveStep(
  optimizer: AdaptiveOptimizer,
  options: AdaptiveOptions,
  params: Value,
  delta: Value,
  state: AdaptiveState<Value>,
  lr: Value,
): { params: Value; state: AdaptiveState<Value> } {
  const { beta1, beta2, tau } = { ...adaptiveDefaults, ...options };
  const shared = { b1: beta1, eps: tau };
  const rule =
    optimizer === "adagrad" ? adagrad(lr, shared) : (optimizer === "adam" ? adam : yogi)(lr, { ...shared, b2: beta2, biasCorrection: false });
  const [updates, next] = (rule as unknown as LooseTransformation).update(delta, { count: zeroScalarLike(params), mu: state.m, nu: state.v });
  return { params: ops.sub(params, updates), state: { m: next.mu, v: next.nu } };
}

/**
 * Server momentum's options: the momentum and whether it is Nesterov's.
 *
 * @example
 * const round = fedAvgMProgram(logistic, { momentum: 0.9 } satisfies ServerMomentumOptions);
 */
export interface ServerMomentumOptions {
  /** The momentum (default 0.9). */
  readonly momentum?: number;
  /** Nesterov's form, as DiLoCo's outer optimiser (default false: heavy ball, as FedAvgM). */
  readonly nesterov?: boolean;
}

/**
 * A server SGD step with momentum along the pseudo-gradient g = -delta (the library's sgd with
 * momentum, PyTorch's SGD without dampening):
 *   buffer = momentum buffer + g;   params = params - lr buffer   (or lr (g + momentum buffer), Nesterov)
 */
export function serverMomentumStep(params: Value, delta: Value, buffer: Value, lr: Value, options: ServerMomentumOptions = {}): { params: Value; buffer: Value } {
  const rule = sgd(lr, { momentum: options.momentum ?? 0.9, nesterov: options.nesterov ?? false }) as unknown as LooseTransformation;
  const [updates, next] = rule.update(ops.neg(delta), { count: zeroScalarLike(params), trace: buffer });
  return { params: applyUpdates(params, updates), buffer: next.trace };
}

/**
 * A tree shaped like `params` with every element `value`: initial optimiser state.
 *
 * @example
 * import { filledLike, logistic, Rng } from "fedtensor/lib";
 * const params = logistic.init(Rng.fromSeed(0));
 * const buffer = filledLike(params, 0); // { w: zeros [784, 10], b: zeros [10] }
 */
export function filledLike<P>(params: HostParams<P>, value: number): HostParams<P> {
  const out = {} as Record<keyof P, { shape: number[]; data: Float32Array }>;
  for (const key of Object.keys(params) as (keyof P)[]) {
    const { shape, data } = params[key];
    out[key] = { shape: [...shape], data: new Float32Array(data.length).fill(value) };
  }
  return out as HostParams<P>;
}

/**
 * The initial state of an adaptive server optimiser: m = 0 and v = tau^2, the smallest start
 * Reddi et al.'s Algorithm 2 allows (v_{-1} >= tau^2).
 *
 * @example
 * import { initialAdaptiveState, logistic, Rng } from "fedtensor/lib";
 * const state = initialAdaptiveState(logistic.init(Rng.fromSeed(0)), 1e-3);
 * console.log(state.m.w.data[0], state.v.w.data[0]); // 0 and tau^2 (about 1e-6)
 */
export function initialAdaptiveState<P>(params: HostParams<P>, tau: number = adaptiveDefaults.tau): AdaptiveState<HostParams<P>> {
  return { m: filledLike(params, 0), v: filledLike(params, tau * tau) };
}
