/**
 * Server optimisers: updates of the server model from the cohort's mean delta, on whole
 * parameter trees, with their state (trees with the parameters' structure) kept at the SERVER
 * and carried by the caller from round to round.
 */
import type { HostParams } from "../models/model.js";
import { ops, type Value } from "./loose.js";

export type AdaptiveOptimizer = "adam" | "yogi" | "adagrad";

export interface AdaptiveOptions {
  /** Momentum of the first moment m (default 0.9). */
  readonly beta1?: number;
  /** Decay of the second moment v, for Adam and Yogi (default 0.99). */
  readonly beta2?: number;
  /** Adaptivity: added to sqrt(v) before dividing (default 1e-3). */
  readonly tau?: number;
}

export const adaptiveDefaults = { beta1: 0.9, beta2: 0.99, tau: 1e-3 } as const;

/** An adaptive optimiser's state: first and second moments, each shaped like the parameters. */
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
  const m = ops.add(ops.mul(state.m, beta1), ops.mul(delta, 1 - beta1));
  const squared = ops.mul(delta, delta);
  const v =
    optimizer === "adam"
      ? ops.add(ops.mul(state.v, beta2), ops.mul(squared, 1 - beta2))
      : optimizer === "yogi"
        ? ops.sub(state.v, ops.mul(ops.mul(squared, ops.sign(ops.sub(state.v, squared))), 1 - beta2))
        : ops.add(state.v, squared);
  const step = ops.div(m, ops.add(ops.sqrt(v), tau));
  return { params: ops.add(params, ops.mul(step, lr)), state: { m, v } };
}

/**
 * A Nesterov momentum SGD step (as PyTorch's SGD with nesterov=true, which DiLoCo uses as its
 * outer optimiser) along a gradient g:
 *   buffer = momentum buffer + g;   params = params - lr (g + momentum buffer)
 */
export function nesterovStep(params: Value, g: Value, buffer: Value, lr: Value, momentum: number): { params: Value; buffer: Value } {
  const next = ops.add(ops.mul(buffer, momentum), g);
  return { params: ops.sub(params, ops.mul(ops.add(g, ops.mul(next, momentum)), lr)), buffer: next };
}

/** A tree shaped like `params` with every element `value`: initial optimiser state. */
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
 */
export function initialAdaptiveState<P>(params: HostParams<P>, tau: number = adaptiveDefaults.tau): AdaptiveState<HostParams<P>> {
  return { m: filledLike(params, 0), v: filledLike(params, tau * tau) };
}
