/**
 * An aggregator as a value (TFF's AggregationProcess: `initialize` and `next`): a checked
 * chain of stages (stages.ts) that takes the clients' updates {T}@CLIENTS, with their weights,
 * to one T@SERVER, and the server state it carries from round to round (adaptive clipping's
 * clip norm). A round program that uses it takes `inputs` and `state` as program inputs and
 * returns the next state under the same names; `releases` says whether the program may
 * declare its client data private.
 */
import type { Presumed, Validate } from "../../../types/errors.js";
import type { Message } from "../../../types/errors.js";
import type { Got, IsUnknown, Moved, PrivacyMessage, Release, ReduceCheck, UnknownMessage } from "../../../types/placement.js";
import type { MayBeAt, PlacementsOf, Tensor, TensorSpec, TreeLike } from "../../../types/tensor.js";
import type { InputSpecs } from "../../front/program.js";
import { atClients, atServer, f32, i32 } from "../../front/specs.js";
import type { Value } from "../algorithms/loose.js";
import type { HypersOf } from "../algorithms/types.js";
import type { HostTensor } from "../data/host-tensor.js";
import { aggregate, type ClientRoundData } from "./aggregate.js";
import { checkChain, chainName, dpClip, isClientStage, releasingKinds, robustKinds, type ChainCheck, type Releases, type Stage } from "./stages.js";

type Scalar = TensorSpec<[], "float32", "local">;
/** The program inputs of a dp stage: DP-FedAvg's, as FedAvg under clip,dp takes them. */
export interface DpInputSpecs {
  /** The update's noise multiplier z: N(0, (z C)^2) is added to the sum of updates clipped to C (the state `clip`). */
  readonly noiseMultiplier: Scalar;
  /** The denominator m: the expected number of clients that report. */
  readonly expectedClients: Scalar;
  /** Adaptive clipping only: gamma, eta and sigma_b. */
  readonly targetQuantile?: Scalar;
  readonly clipLr?: Scalar;
  readonly countStddev?: Scalar;
}
/** The key every random or masking stage draws from, folded with the round inside the program. */
export interface KeyInputSpecs {
  readonly key: TensorSpec<[2], "int32", "server">;
  readonly round: TensorSpec<[], "int32", "local">;
}
/** Distributed DP's CLIENTS input: each client's own key for its rounding and noise, private as its data. */
export interface DistributedDpInputSpecs {
  readonly clientKeys: TensorSpec<[2], "int32", "clients-private">;
}
/** The simulated attack's inputs: which clients attack (1s and 0s) and the attack's scale. */
export interface AttackInputSpecs {
  readonly malicious: TensorSpec<[], "float32", "clients">;
  readonly attackScale: Scalar;
}

/**
 * The program inputs a chain of literal stages adds to a round (its state `clip` included):
 * the dp stage's, the key and round of the stages that draw or mask, distributed DP's clients'
 * keys, the attack's.
 */
export type ChainInputs<S extends readonly Stage[]> = ("dp" extends S[number]["kind"] ? { readonly clip: TensorSpec<[], "float32", "server"> } & DpInputSpecs : unknown) &
  ("attack" extends S[number]["kind"] ? AttackInputSpecs : unknown) &
  ("distributed-dp" extends S[number]["kind"] ? DistributedDpInputSpecs : unknown) &
  (Extract<S[number]["kind"], "dp" | "secure" | "distributed-dp" | "attack" | "quantize"> extends never ? unknown : KeyInputSpecs);

/**
 * An aggregator; R says whether it releases private data, I the program inputs it adds (known
 * for chains of literal stages; any for chains built at run time).
 *
 * @example
 * import { atClients, atServer, f32, i32, program } from "fedtensor";
 * import { aggregationStages as s, aggregator, type Aggregator } from "fedtensor/lib";
 * const secure = aggregator(s.secure({ bits: 30, clip: 1, maxWeight: 100, maxClients: 10 }));
 * const releases: Aggregator<true> = secure;
 * const inputs = { u: atClients(f32([3]), { private: true }), mask: atClients(f32([4]), { private: true }), count: atClients(f32([]), { private: true }), key: atServer(i32([2])), round: i32([]) };
 * const mean = program(inputs, ({ u, mask, count, key, round }) => secure.next(u, { mask, count }, { key, round }).value); // the count-weighted mean, each coordinate clipped to [-1, 1]
 */
export interface Aggregator<R extends boolean = boolean, I = unknown> {
  /** Its inputs' types (a phantom: no value at run time). */
  readonly inputTypes?: I;
  /** The chain, from the clients to the server. */
  readonly stages: readonly Stage[];
  /** The chain as --aggregator writes it, e.g. "clip,dp,secure". */
  readonly name: string;
  /** Whether it takes private client data to the SERVER (it holds dp, secure or distributed-dp). */
  readonly releases: R;
  /** Whether it needs every client's update at once (a robust stage, or the per-client draws of attack and quantize): FT322 for chunks. */
  readonly wholeCohort: boolean;
  /** The program inputs it reads besides its state (which comes first among a program's inputs: DP-FedAvg's order). */
  readonly inputs: InputSpecs;
  /** Its server state, as program inputs (and outputs of the same names): { clip } with dp. */
  readonly state: InputSpecs;
  /** The state of the first round (TFF's initialize). */
  initialize(): Record<string, HostTensor>;
  /**
   * TFF's next, on traced values inside a program: the clients' updates {T}@CLIENTS, with each
   * client's round data (its batch mask and its example count, the mean's weight), to T@SERVER,
   * and the next state. `inputs` are the aggregator's (its state among them: the dp stage's
   * clip). Private updates go in only when it releases, and come out released (FT109 otherwise).
   */
  next<T extends TreeLike, D extends ClientRoundData>(
    updates: Validate<T, NextCheck<R, T>>,
    data: Validate<D, DataCheck<R, D>>,
    inputs: HypersOf<I>,
  ): Presumed<{ value: R extends true ? Release<T> : Moved<T, "server">; state: StateOf<I> }>;
}

/**
 * Whether an aggregator takes private client data to the SERVER, as a type guard: an
 * `Aggregator` whose `releases` is not known statically (a parameter typed `Aggregator`) is
 * narrowed to one that releases, whose next() then takes private updates and round data.
 *
 * @example
 * import { aggregationStages as s, aggregatorOf, releasesPrivateData } from "fedtensor/lib";
 * const chain = aggregatorOf([s.clip(1), s.dp()]);
 * if (releasesPrivateData(chain)) console.log(`${chain.name} may take private client data`); // narrowed to Aggregator<true>
 */
export function releasesPrivateData<I>(chain: Aggregator<boolean, I>): chain is Aggregator<true, I> {
  return chain.releases;
}

/**
 * An aggregator whose chain is known only at run time (aggregatorOf): one that releases or one
 * that does not, so that `if (chain.releases)` narrows it to the one that may take private data.
 *
 * @example
 * import { aggregationStages as s, aggregatorOf, type SomeAggregator } from "fedtensor/lib";
 * const chain: SomeAggregator = aggregatorOf(process.argv.includes("--dp") ? [s.clip(1), s.dp()] : [s.mean()]);
 * if (chain.releases) console.log("DP: private client data may go in"); // narrowed to Aggregator<true>
 */
export type SomeAggregator<I = unknown> = Aggregator<true, I> | Aggregator<false, I>;

/**
 * next()'s updates: float32 CLIENTS trees, private only when the aggregator is known to
 * release; through one whose `releases` is not known statically (`boolean`), private updates
 * are FT116 (fail closed: narrow it with releasesPrivateData(chain)).
 */
type NextCheck<R, T> = [R] extends [true]
  ? Exclude<ReduceCheck<"next", T, "float32">, PrivacyMessage<"next()", T> | UnknownMessage<"next()", T>>
  : [R] extends [false]
    ? ReduceCheck<"next", T, "float32">
    : Exclude<ReduceCheck<"next", T, "float32">, PrivacyMessage<"next()", T>> | NotKnownToRelease<"next()", T>;
// (An unknown placement through a chain not known to release stays FT115: ReduceCheck.)

/**
 * next()'s round data, each client's batch mask and example count (the mean's weight): private
 * only through an aggregator known to release (FT109, FT116 as for the updates); with a
 * placement tsc cannot know, FT115 unless it releases.
 */
type DataCheck<R, D> = [R] extends [true]
  ? never
  : IsUnknown<PlacementsOf<D>> extends true
    ? UnknownMessage<"next()'s round data", D>
    : [R] extends [false]
      ? "clients-private" extends PlacementsOf<D>
        ? PrivacyMessage<"next()'s round data (its masks and counts weigh the mean)", D>
        : never
      : NotKnownToRelease<"next()'s round data", D>;

/** FT116 for the private leaves of T given to an aggregator not known to release. */
type NotKnownToRelease<What extends string, T> = "clients-private" extends PlacementsOf<T> ? Message<"FT116", { what: What; got: Got<MayBeAt<T, "clients-private">> }> : never;
/** The state next() returns: the dp stage's clip, when its inputs I hold one (any state when I is not known statically). */
type StateOf<I> = unknown extends I
  ? Record<string, Tensor<[], "float32", "server">>
  : I extends { readonly clip: unknown }
    ? { clip: Tensor<[], "float32", "server"> }
    : Record<string, never>;

/**
 * An aggregator from its stages, read from the clients to the server:
 * `aggregator(clip(1), dp(), secure({ bits: 30, clip: 1, maxWeight: 600, maxClients: 100 }))`.
 * The composition is checked here (FT326) and, for literal stages, in the types (FT114). A
 * chain without a server stage ends with the weighted mean. With adaptive clipping give the
 * first round's clip as `initialClip` (default 0.1, as --dp-initial-clip).
 */
export function aggregator<const S extends readonly Stage[]>(...stages: Validate<S, ChainCheck<S>> & S): Aggregator<Releases<S>, ChainInputs<S>>;
export function aggregator(...stages: Stage[]): SomeAggregator {
  return aggregatorOf(stages);
}

/**
 * aggregator() for a chain built at run time (--aggregator), with adaptive clipping's first clip.
 *
 * @example
 * import { aggregationStages as s, aggregatorOf, fedAvgProgram, logistic } from "fedtensor/lib";
 * const chain = aggregatorOf([s.clip("adaptive"), s.dp()], { initialClip: 0.5 }); // a chain chosen at run time, as --aggregator clip,dp
 * console.log(chain.name, chain.releases, chain.initialize().clip!.data); // clip,dp true Float32Array [0.5]
 * const round = fedAvgProgram(logistic, { aggregator: chain });
 */
export function aggregatorOf(given: readonly Stage[], options: { readonly initialClip?: number } = {}): SomeAggregator {
  checkChain(given);
  const stages = given.every(isClientStage) ? [...given, { kind: "mean" } as const] : [...given];
  const kinds = new Set(stages.map((s) => s.kind));
  const clip = dpClip(stages);
  const releases = [...kinds].some((k) => releasingKinds.has(k));
  const keyed = releases || kinds.has("attack") || kinds.has("quantize");
  const adaptive = clip?.bound === "adaptive";
  const inputs: Record<string, unknown> = {
    ...(kinds.has("dp") ? { noiseMultiplier: f32([]), expectedClients: f32([]) } : {}),
    ...(kinds.has("attack") ? { malicious: atClients(f32([])), attackScale: f32([]) } : {}),
    ...(keyed ? { key: atServer(i32([2])), round: i32([]) } : {}),
    ...(kinds.has("distributed-dp") ? { clientKeys: atClients(i32([2]), { private: true }) } : {}),
    ...(adaptive ? { targetQuantile: f32([]), clipLr: f32([]), countStddev: f32([]) } : {}),
  };
  const first = clip === undefined ? undefined : adaptive ? (options.initialClip ?? 0.1) : (clip.bound as number);
  return {
    stages,
    name: chainName(given),
    releases,
    wholeCohort: [...kinds].some((k) => robustKinds.has(k)),
    inputs: inputs as InputSpecs,
    state: (first === undefined ? {} : { clip: atServer(f32([])) }) as InputSpecs,
    initialize: (): Record<string, HostTensor> => (first === undefined ? {} : { clip: { shape: [], data: Float32Array.of(first) } }),
    next: ((updates: Value, data: ClientRoundData, values: Value) => aggregate({ stages, inputs }, { updates, data }, values)) as never,
  };
}

/**
 * FedAvg's aggregator: the example-weighted mean.
 *
 * @example
 * import { fedAvgProgram, logistic, meanAggregator } from "fedtensor/lib";
 * const round = fedAvgProgram(logistic, { aggregator: meanAggregator }); // the same as fedAvgProgram(logistic)
 */
export const meanAggregator: Aggregator<false, unknown> = aggregatorOf([{ kind: "mean" }]) as Aggregator<false>;
