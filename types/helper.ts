/**
 * Types for user helpers (docs/language.md "Writing helpers"): named aliases for the values a
 * helper takes, and the call-site checks of a placement-generic helper made with helper().
 *
 * Why helper() and not a generic placement parameter: inside `function f<P>(x: Tensor<S, D, P>)`
 * every rule that decides an operation's result on P is deferred (TypeScript cannot tell what P
 * will be), so each operation's parameter check stays an unresolved conditional type and the
 * call fails with a wall of types. helper() instead types the body once with no placement, where
 * every shape and dtype rule resolves, and checks the placements at each call: the arguments'
 * leaves must join as an operation's operands do (FT102, FT104-FT106 naming the helper), and the
 * result is the body's, moved to the joined placement (private when an argument is private).
 */
import type { Failures, Message, Presumed, Validate } from "./errors.js";
import type { JoinPlacement } from "./placement.js";
import type { Print } from "./print.js";
import type { DType, Leaves, Placement, PlacementOf, Place, privateData, Shape, Tensor, Typed, IsAny } from "./tensor.js";

/**
 * T, for public values only: a value carrying private client data (types/tensor.ts
 * privateData) is refused with FT109 naming `What` and the private counterpart `Private` of T.
 * The message is the first constituent, so that tsc's elaboration reports it before the
 * placements that differ; a value at another public placement gets TypeScript's own mismatch.
 */
export type PublicOnly<T extends Typed, What extends string, Private extends Typed> = {
  readonly [privateData]?: Message<"FT109", { what: What; got: Print<Private> }>;
} & T;
type PublicAlias<Name extends string, Private extends string> = `a parameter typed ${Name} (public data; ${Private} takes private data)`;

/** A float32 tensor of shape S at placement P (no placement unless given: a helper's body). */
export type Float<S extends Shape, P extends Placement = "local"> = Tensor<S, "float32", P>;
/** An int32 tensor of shape S at placement P. */
export type Int<S extends Shape, P extends Placement = "local"> = Tensor<S, "int32", P>;
/**
 * A bool tensor of shape S at placement P.
 *
 * @example
 * const isPositive = helper("isPositive", (x: Float<[3]>): Bool<[3]> => greater(x, 0));
 */
export type Bool<S extends Shape, P extends Placement = "local"> = Tensor<S, "bool", P>;
/**
 * A SERVER value of shape S: `f32[S]@SERVER`.
 *
 * @example
 * const step = (w: AtServer<[10]>, g: AtServer<[10]>) => sub(w, mul(g, 0.1));
 */
export type AtServer<S extends Shape, D extends DType = "float32"> = Tensor<S, D, "server">;
/**
 * A CLIENTS value of shape S whose members may differ: `{f32[S]}@CLIENTS`; public data only (FT109).
 *
 * @example
 * const meanOf = (x: AtClients<[10]>) => reduceMean(x);
 */
export type AtClients<S extends Shape, D extends DType = "float32"> = PublicOnly<
  Tensor<S, D, "clients">,
  PublicAlias<"AtClients", "PrivateAtClients">,
  PrivateAtClients<S, D>
>;
/**
 * A CLIENTS value computed from private client data: `{f32[S]}@CLIENTS(private)`.
 *
 * @example
 * const release = (x: PrivateAtClients<[10]>, key: AtServer<[2], "int32">) => dpSum(x, { clip: 1, noiseMultiplier: 1, key });
 */
export type PrivateAtClients<S extends Shape, D extends DType = "float32"> = Tensor<S, D, "clients-private">;
/**
 * One client's member of a CLIENTS value, as map()'s function sees it; public data only (FT109).
 *
 * @example
 * const clipped = helper("clipped", (m: Member<[10]>) => clipByNorm(m, 1));
 */
export type Member<S extends Shape, D extends DType = "float32"> = PublicOnly<Tensor<S, D, "member">, PublicAlias<"Member", "PrivateMember">, PrivateMember<S, D>>;
/**
 * One client's member of a private CLIENTS value, as map()'s function sees it.
 *
 * @example
 * const clippedPrivate = helper("clippedPrivate", (m: PrivateMember<[10]>) => clipByNorm(m, 1));
 */
export type PrivateMember<S extends Shape, D extends DType = "float32"> = Tensor<S, D, "member-private">;

/** Which placement wins when compatible placements meet (the join of types/placement.ts on them). */
type Rank = ["member-private", "member", "clients-private", "clients", "clients-equal", "server", "local"];
type Top<Ps, R extends readonly Placement[] = Rank> = R extends readonly [infer P extends Placement, ...infer Rest extends readonly Placement[]]
  ? P extends Ps
    ? P
    : Top<Ps, Rest>
  : "local";

/**
 * The leaves of a list of arguments, each argument walked on its own: an `any` argument has
 * none (it opts out of the checks), and does not hide the others' as a union with it would.
 */
type ArgLeaves<Xs extends readonly unknown[]> = { [K in keyof Xs]: Leaves<Xs[K]> }[number];

/**
 * The placement of a helper's result: `any` when an argument is `any` (it opted out, and so
 * does the result: no second diagnostic), unknown statically (`Placement`, refused where it
 * is released: FT115) when an argument's placement is.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type HelperPlacement<Xs extends readonly unknown[]> = true extends { [K in keyof Xs]: IsAny<Xs[K]> }[number]
  ? any
  : Placement extends PlacementOf<ArgLeaves<Xs>>
    ? Placement
    : Top<PlacementOf<ArgLeaves<Xs>>>;

/** The failed joins of every leaf in Before with every leaf in X (and X's leaves among themselves). */
type JoinFailures<Name extends string, Before, X> = Before extends Typed
  ? X extends Typed
    ? Failures<JoinPlacement<Name, Before, X>>
    : never
  : never;

/** The leaves of the arguments before index K, as a union. */
type LeavesBefore<Xs extends readonly unknown[], K extends string, Acc extends readonly unknown[] = []> = `${Acc["length"]}` extends K
  ? ArgLeaves<Acc>
  : Xs extends readonly [infer X, ...infer Rest]
    ? LeavesBefore<Rest, K, [...Acc, X]>
    : ArgLeaves<Acc>;

/** The messages of argument K: its leaves joined with the earlier arguments' and its own. */
type ArgFailures<Name extends string, Xs extends readonly unknown[], K extends string> = JoinFailures<
  Name,
  LeavesBefore<Xs, K> | Leaves<Xs[K & keyof Xs]>,
  Leaves<Xs[K & keyof Xs]>
>;

/** The index of the first argument whose placement cannot join the ones before it, as text. */
type FirstFailing<Name extends string, Xs extends readonly unknown[], I extends readonly unknown[] = []> = I["length"] extends Xs["length"]
  ? never
  : [ArgFailures<Name, Xs, `${I["length"]}`>] extends [never]
    ? FirstFailing<Name, Xs, [...I, unknown]>
    : `${I["length"]}`;

/** The FT messages reported on argument K: only on the first failing one, so a mistake is one diagnostic. */
export type HelperArgCheck<Name extends string, Xs extends readonly unknown[], K> = K extends FirstFailing<Name, Xs>
  ? ArgFailures<Name, Xs, K & string>
  : never;

/**
 * What argument X must be for the body's parameter Param: X itself when X without its
 * placement is what the body takes; else the parameter moved to X's placement, so that tsc's
 * "not assignable" names the shape or dtype that differs, not a placement.
 */
export type Fits<X, Param> = IsAny<X> extends true
  ? X
  : [Place<X, "local">] extends [Param]
    ? X
    : X extends Tensor<Shape, DType, infer P>
      ? Place<Param, P>
      : Param;

/** The body's result with its local leaves at P; a leaf it captured at a placement is not known statically (FT115 where it is released). */
export type HelperResult<R, P extends Placement> = IsAny<R> extends true
  ? R
  : R extends Tensor<infer S, infer D, infer Q>
    ? Tensor<S, D, Q extends "local" ? P : Placement>
    : R extends number | string | boolean | undefined
      ? R
      : { -readonly [K in keyof R]: HelperResult<R[K], P> };

/**
 * A placement-generic helper: called with any arguments that are, without their placements,
 * what its body takes; their placements must join (FT102, FT104-FT106 name the helper), and
 * the result is the body's at the joined placement.
 * @example
 * const scale: Helper<"scale", [Float<[3]>], Float<[3]>> = helper("scale", (x: Float<[3]>) => mul(x, 2));
 */
export type Helper<Name extends string, Params extends readonly unknown[], R> = <const Xs extends readonly unknown[]>(
  ...xs: Xs["length"] extends Params["length"]
    ? { [K in keyof Xs]: Validate<Fits<Xs[K], Params[K & keyof Params]>, HelperArgCheck<Name, Xs, K>> }
    : Params
) => Presumed<HelperResult<R, HelperPlacement<Xs>>>;
