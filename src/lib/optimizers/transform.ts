/**
 * Gradient transformations, optax's design: an optimiser is a pair of pure functions over
 * whole parameter trees,
 *   init(params) -> state
 *   update(updates, state, params?) -> [updates, state]
 * written with FedTensor's operations, so they trace into programs and run on every backend.
 * The state is a tree of the same placement as the parameters: an optimiser inside map's
 * function keeps local state, one at the server keeps SERVER state, which a round program
 * takes as an input and returns as an output.
 *
 * The state's structure is named by a kind (a key of StateKinds, or a tuple of kinds for a
 * chain), so the static types follow the tree given: a tree in, the same tree out, placements
 * preserved. Privacy follows the data (docs/language.md "Privacy"): updates computed from
 * private data (a gradient of a private loss, inside map's function) make the new state and
 * updates private, whatever the placement of the state they start from.
 */
import type { Presumed, Validate } from "../../../types/errors.js";
import type { PublicOnly } from "../../../types/helper.js";
import type { Tainted } from "../../../types/placement.js";
import type { Place, Placement, Tensor, TreeLike } from "../../../types/tensor.js";
import { ops, type Value } from "../algorithms/loose.js";
import type { ComputedFrom, JoinCheck, JoinedOf } from "../algorithms/placements.js";

/**
 * The number of steps taken: a float32 scalar at the (joined) placement of the parameters.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type StepCount } from "fedtensor/lib";
 * type Count = StepCount<{ w: Tensor<[3], "float32", "member"> }>; // f32[] on the members: the count lives where the parameters do
 */
export type StepCount<P> = Tensor<[], "float32", JoinedOf<P>>;

/**
 * The state of each kind of transformation for parameters (or updates) P.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type StateKinds } from "fedtensor/lib";
 * type Params = { w: Tensor<[3], "float32", "server"> };
 * type Momentum = StateKinds<Params>["trace"]; // { count: f32[]@SERVER, trace: Params }
 */
export interface StateKinds<P> {
  /** No state: gradient clipping. */
  readonly empty: { readonly [key: string]: never };
  /** The step count alone: plain SGD (a schedule reads the count). */
  readonly count: { count: StepCount<P> };
  /** SGD with momentum or Nesterov: the count and the momentum buffer. */
  readonly trace: { count: StepCount<P>; trace: P };
  /** The adaptive methods: the count and the first and second moments. */
  readonly moments: { count: StepCount<P>; mu: P; nu: P };
}

/**
 * What state a gradient transformation keeps: a step count, a momentum trace, moments, or a tuple
 * of these for a chain.
 *
 * @example
 * import { adam, chain, clipByGlobalNorm, type GradientTransformation, type StateKind } from "fedtensor/lib";
 * const clippedAdam: GradientTransformation<readonly ["empty", "moments"]> = chain(clipByGlobalNorm(1), adam(1e-3));
 * const kind: StateKind = ["empty", "moments"]; // the kinds of its parts' states
 */
export type StateKind = keyof StateKinds<unknown> | readonly StateKind[];

/**
 * The state of a transformation of kind K for parameters P; a chain's is the tuple of its parts'.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type OptimizerState } from "fedtensor/lib";
 * type Params = { w: Tensor<[3], "float32", "server"> };
 * type AdamState = OptimizerState<"moments", Params>; // { count, mu: Params, nu: Params }
 * type ChainState = OptimizerState<["empty", "trace"], Params>; // clipByGlobalNorm then sgd with momentum: [{}, { count, trace }]
 */
export type OptimizerState<K extends StateKind, P> = K extends keyof StateKinds<unknown>
  ? StateKinds<P>[K]
  : K extends readonly unknown[]
    ? number extends K["length"]
      ? // A chain of parts not known statically (StateKind itself: any transformation): their states.
        readonly object[]
      : { -readonly [I in keyof K]: K[I] extends StateKind ? OptimizerState<K[I], P> : never }
    : never;

/**
 * An optimiser as optax has it: `init(params)` makes the state, `update(updates, state, params)`
 * transforms gradients into the updates to add and the next state; chained with chain().
 *
 * @example
 * const opt: GradientTransformation<"moments"> = adam(1e-3);
 * // In a traced program: const state = opt.init(params); const [updates, next] = opt.update(grads, state, params);
 */
export interface GradientTransformation<K extends StateKind> {
  /** The initial state for parameters `params`. */
  init<P extends TreeLike>(params: P): OptimizerState<K, P>;
  /**
   * Transforms `updates` (gradients, for the first transformation of a chain) into the
   * updates to add to the parameters; `params` is needed by weight decay only. The tree's
   * structure comes from `updates`, so a state or parameters of another tree are errors; they
   * may be at another placement where an operation on both can run (members and private
   * members, say), and the results are private where any of the three is.
   */
  update<G extends TreeLike, S extends TreeLike, P extends Like<G> = never>(
    updates: Validate<G, JoinCheck<"update", [G, S, P]>>,
    state: NoInfer<OptimizerState<K, Like<G>>> & S,
    params?: P,
  ): Presumed<[Tainted<G, [S, P]>, Tainted<OptimizerState<K, G>, [G, S, P]>]>;
}

/**
 * A tree with G's structure, shapes and dtypes, at any placement.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type Like } from "fedtensor/lib";
 * type Grads = { w: Tensor<[3], "float32", "server"> };
 * const atAnyPlacement: Like<Grads>["w"]["shape"] = [3]; // Grads' structure, shapes and dtypes at any placement
 */
export type Like<G> = Place<G, Placement>;

/**
 * A learning rate as a function of the step count (the count before this step: 0 first), as a
 * user writes one: its placement is not known statically (tracing checks it).
 *
 * @example
 * import { div, maximum, sqrt } from "fedtensor";
 * import { sgd, type Schedule } from "fedtensor/lib";
 * const inverseSqrt: Schedule = (count) => div(0.1, sqrt(maximum(count, 1))); // 0.1 / sqrt(t)
 * const opt = sgd(inverseSqrt);
 */
export type Schedule = (count: Tensor<[], "float32", Placement>) => Tensor<[], "float32", Placement>;

/**
 * A schedule whose rate is at its count's placement, as the library's are: a count inside
 * map's function on private members gives a private rate. Every PlacedSchedule is a Schedule.
 *
 * @example
 * import { exponentialDecay, type PlacedSchedule } from "fedtensor/lib";
 * const schedule: PlacedSchedule = exponentialDecay(0.1, { transitionSteps: 100, decayRate: 0.9 }); // a rate at its count's placement
 */
export type PlacedSchedule = <P extends Placement>(count: Tensor<[], "float32", P>) => Tensor<[], "float32", P>;

/**
 * A rate as a traced value: a local f32[] (a program's `lr` input). A private one is FT109:
 * the optimiser's result types do not carry the rate's privacy, so its updates would look
 * public (docs/language.md "Privacy" lists this among the places tsc is stricter than tracing).
 */
export type LocalRate = PublicOnly<
  Tensor<[], "float32", "local">,
  "a learning rate (a number, a local f32[] or a schedule: public data)",
  Tensor<[], "float32", "member-private">
>;

/**
 * A learning rate: a number, a traced local scalar (a program input), or a schedule.
 *
 * @example
 * import { cosineDecay, sgd, type LearningRate } from "fedtensor/lib";
 * const rates: LearningRate[] = [0.1, cosineDecay(0.1, { decaySteps: 100 })]; // or a program's local f32[] input
 * const optimizers = rates.map((rate) => sgd(rate));
 */
export type LearningRate = number | LocalRate | Schedule;

/** A transformation written on untyped traced values; `typed` gives it its static type. */
export interface LooseTransformation {
  init(params: Value): Value;
  update(updates: Value, state: Value, params?: Value): [Value, Value];
}

export const typed = <K extends StateKind>(transformation: LooseTransformation): GradientTransformation<K> => transformation as never;

/** The learning rate of the step taken at `count`. */
export function learningRateAt(learningRate: LearningRate | Value, count: Value): Value {
  return typeof learningRate === "function" ? learningRate(count) : learningRate;
}

/**
 * optax.chain: the transformations applied in turn, each to the previous one's updates
 * (clipping before an optimiser: `chain(clipByGlobalNorm(1), adam(1e-3))`). The state is the
 * tuple of the parts' states.
 */
export function chain<const K extends readonly StateKind[]>(...transformations: { [I in keyof K]: GradientTransformation<K[I]> }): GradientTransformation<K> {
  const parts = transformations as unknown as readonly LooseTransformation[];
  return typed({
    init: (params) => parts.map((part) => part.init(params)),
    update: (updates, state, params) => {
      const states: Value[] = [];
      const out = parts.reduce((current: Value, part, i) => {
        const [next, partState] = part.update(current, state[i], params);
        states.push(partState);
        return next;
      }, updates);
      return [out, states];
    },
  });
}

/**
 * The parameters moved by the updates: params + updates (optax.apply_updates), at their joined
 * placement (private updates give private parameters).
 *
 * @example
 * import { f32, grad, program, square, sum } from "fedtensor";
 * import { adam, applyUpdates } from "fedtensor/lib";
 * const opt = adam(0.01);
 * const step = program({ w: f32([4]) }, ({ w }) => {
 *   const [updates] = opt.update(grad((p: typeof w) => sum(square(p)))(w), opt.init(w), w);
 *   return applyUpdates(w, updates); // w + updates, as optax.apply_updates
 * });
 */
export function applyUpdates<P extends TreeLike, U extends Like<P>>(params: Validate<P, JoinCheck<"applyUpdates", [P, U]>>, updates: U): Presumed<ComputedFrom<P, [P, U]>> {
  return ops.add(params, updates);
}
