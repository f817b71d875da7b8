/**
 * Learning-rate schedules (optax's): functions of the step count, written with FedTensor's
 * operations so that an optimiser evaluates them inside a program from the count in its
 * state. The peak (initial) value may be a number or a traced local scalar (a program's `lr`
 * input); the step counts are numbers fixed when the program is built.
 */
import { ftError } from "../../errors/error.js";
import { ops, type Value } from "../algorithms/loose.js";
import type { LocalRate, PlacedSchedule, Schedule } from "./transform.js";

/** A rate: a number, or a traced local scalar (a program's `lr` input; a private one is FT109). */
type Rate = number | LocalRate;

/** FT302 unless `value` is allowed, naming the hyper-parameter and the allowed range. */
export function requireHyper(what: string, value: number, allowed: (x: number) => boolean, range: string): void {
  if (!Number.isFinite(value) || !allowed(value)) throw ftError("FT302", { what, why: `must be ${range}, got ${value}` });
}

const positiveInteger = (what: string, value: number) => requireHyper(what, value, (x) => Number.isSafeInteger(x) && x > 0, "a positive integer");
const fraction = (what: string, value: number) => requireHyper(what, value, (x) => x >= 0 && x <= 1, "in [0, 1]");

/**
 * The same rate at every step (a tensor at the count's placement, as every schedule's).
 *
 * @example
 * import { constantSchedule, joinSchedules, linearSchedule } from "fedtensor/lib";
 * const warmThenFlat = joinSchedules([linearSchedule(0, 0.1, 100), constantSchedule(0.1)], [100]);
 */
export function constantSchedule(value: Rate): PlacedSchedule {
  return (count) => ops.add(ops.zerosLike(count), value);
}

/**
 * exponentialDecay's options: the steps per decay, the decay rate and whether it decays in steps.
 *
 * @example
 * const lr = exponentialDecay(0.1, { transitionSteps: 100, decayRate: 0.5, staircase: true } satisfies ExponentialDecayOptions);
 */
export interface ExponentialDecayOptions {
  /** Steps over which the rate is multiplied by decayRate once. */
  readonly transitionSteps: number;
  readonly decayRate: number;
  /** Decay in whole transitions (a staircase) instead of continuously. */
  readonly staircase?: boolean;
}

/**
 * init * decayRate^(count / transitionSteps), the exponent floored with `staircase`.
 *
 * @example
 * import { exponentialDecay, sgd } from "fedtensor/lib";
 * const opt = sgd(exponentialDecay(0.1, { transitionSteps: 10, decayRate: 0.5, staircase: true })); // 0.1, halved every 10 steps
 */
export function exponentialDecay(init: Rate, { transitionSteps, decayRate, staircase = false }: ExponentialDecayOptions): PlacedSchedule {
  positiveInteger("exponentialDecay transitionSteps", transitionSteps);
  requireHyper("exponentialDecay decayRate", decayRate, (x) => x > 0, "> 0");
  return (count) => {
    const transitions = ops.div(count, transitionSteps);
    // The count is never negative, so truncation to an integer is the floor.
    const exponent = staircase ? ops.cast(ops.cast(transitions, "int32"), "float32") : transitions;
    return ops.mul(ops.pow(decayRate, exponent), init);
  };
}

/**
 * Step decay (PyTorch's StepLR): init * gamma^floor(count / stepSize).
 *
 * @example
 * import { sgd, stepDecay } from "fedtensor/lib";
 * const opt = sgd(stepDecay(0.1, { stepSize: 30, gamma: 0.1 })); // torch's StepLR: 0.1, then 0.01 from step 30, ...
 */
export function stepDecay(init: Rate, { stepSize, gamma }: { readonly stepSize: number; readonly gamma: number }): PlacedSchedule {
  return exponentialDecay(init, { transitionSteps: stepSize, decayRate: gamma, staircase: true });
}

/**
 * Cosine decay (Loshchilov & Hutter 2017, without restarts) from init to alpha * init over
 * decaySteps, then constant: init ((1 - alpha) (1 + cos(pi min(count, decaySteps) / decaySteps)) / 2 + alpha).
 *
 * @example
 * import { f32, program } from "fedtensor";
 * import { cosineDecay } from "fedtensor/lib";
 * const schedule = cosineDecay(0.1, { decaySteps: 100, alpha: 0.01 });
 * const rate = program({ count: f32([]) }, ({ count }) => schedule(count));
 * console.log(await (await rate.run({ count: { shape: [], data: Float32Array.of(50) } })).data()); // about 0.0505: halfway down to 0.001
 */
export function cosineDecay(init: Rate, { decaySteps, alpha = 0 }: { readonly decaySteps: number; readonly alpha?: number }): PlacedSchedule {
  positiveInteger("cosineDecay decaySteps", decaySteps);
  fraction("cosineDecay alpha", alpha);
  return (count) => {
    const progress = ops.div(ops.minimum(count, decaySteps), decaySteps);
    const cosine = ops.mul(ops.add(ops.cos(ops.mul(progress, Math.PI)), 1), 0.5);
    return ops.mul(ops.add(ops.mul(cosine, 1 - alpha), alpha), init);
  };
}

/**
 * A linear ramp from `from` to `to` over transitionSteps, then constant at `to`.
 *
 * @example
 * import { adam, linearSchedule } from "fedtensor/lib";
 * const opt = adam(linearSchedule(1e-4, 1e-3, 500)); // from 1e-4 to 1e-3 over 500 steps, then 1e-3
 */
export function linearSchedule(from: Rate, to: Rate, transitionSteps: number): PlacedSchedule {
  positiveInteger("linearSchedule transitionSteps", transitionSteps);
  return (count) => {
    const progress = ops.div(ops.minimum(count, transitionSteps), transitionSteps);
    return ops.add(from, ops.mul(ops.sub(to, from), progress));
  };
}

/**
 * optax.join_schedules: schedules[i] from boundaries[i - 1] on, each counting its steps from
 * its own start. At the count's placement when every part is (the library's schedules).
 *
 * @example
 * import { constantSchedule, cosineDecay, joinSchedules, sgd } from "fedtensor/lib";
 * const schedule = joinSchedules([constantSchedule(0.1), cosineDecay(0.1, { decaySteps: 900 })], [100]); // flat for 100 steps, then cosine; the second counts from 0
 * const opt = sgd(schedule);
 */
export function joinSchedules(schedules: readonly PlacedSchedule[], boundaries: readonly number[]): PlacedSchedule;
export function joinSchedules(schedules: readonly Schedule[], boundaries: readonly number[]): Schedule;
export function joinSchedules(schedules: readonly Schedule[], boundaries: readonly number[]): Schedule {
  if (schedules.length !== boundaries.length + 1) {
    throw ftError("FT302", { what: "joinSchedules", why: `${schedules.length} schedules need ${schedules.length - 1} boundaries, got ${boundaries.length}` });
  }
  boundaries.forEach((b, i) => positiveInteger(`joinSchedules boundary ${i}`, b - (boundaries[i - 1] ?? 0)));
  return (count) =>
    boundaries.reduceRight(
      (later: Value, boundary, i) => ops.where(ops.less(count, boundary), schedules[i]!(ops.sub(count, boundaries[i - 1] ?? 0)), later),
      schedules[schedules.length - 1]!(ops.sub(count, boundaries[boundaries.length - 1] ?? 0)),
    );
}

/**
 * warmupCosineDecay's options: the linear warm-up's steps, the total steps and the final fraction
 * alpha of the peak.
 *
 * @example
 * const lr = warmupCosineDecay(1e-3, { warmupSteps: 100, decaySteps: 1000 } satisfies WarmupCosineOptions);
 */
export interface WarmupCosineOptions {
  /** Steps of the linear warm-up from 0 to the peak. */
  readonly warmupSteps: number;
  /** Steps of the whole schedule, warm-up included: the cosine decays over the rest. */
  readonly decaySteps: number;
  /** The final rate as a fraction of the peak (default 0). */
  readonly alpha?: number;
}

/**
 * Linear warm-up from 0 to `peak`, then cosine decay to alpha * peak (optax.warmup_cosine_decay_schedule).
 *
 * @example
 * import { adamw, warmupCosineDecay } from "fedtensor/lib";
 * const opt = adamw(warmupCosineDecay(1e-3, { warmupSteps: 100, decaySteps: 1000 }));
 */
export function warmupCosineDecay(peak: Rate, { warmupSteps, decaySteps, alpha = 0 }: WarmupCosineOptions): PlacedSchedule {
  positiveInteger("warmupCosineDecay warmupSteps", warmupSteps);
  requireHyper("warmupCosineDecay decaySteps", decaySteps, (x) => Number.isSafeInteger(x) && x > warmupSteps, `an integer > warmupSteps (${warmupSteps})`);
  return joinSchedules([linearSchedule(0, peak, warmupSteps), cosineDecay(peak, { decaySteps: decaySteps - warmupSteps, alpha })], [warmupSteps]);
}
