/**
 * Placement rules at type level (SPEC section 3): which placement an operation's result has,
 * and the FT1xx message when operands cannot meet.
 */
import type { MapAdvice } from "../src/errors/catalogue.js";
import type { Fail, FailWith, Message } from "./errors.js";
export type { Presumed, Validate } from "./errors.js";
import type { At, Print, PrintMember } from "./print.js";
import type {
  AtClients,
  DrawnFrom,
  DType,
  DTypeOf,
  LeafPaths,
  MayBeAt,
  ShapeOf,
  LeafTypes,
  Leaves,
  Member,
  Placement,
  PlacementOf,
  PlacementsOf,
  Place,
  PlaceKeepingPrivacy,
  PrivatePlacement,
  ReleasedServer,
  Tensor,
  Typed,
  IsAny,
  Unreleased,
} from "./tensor.js";

/**
 * How two operand placements combine; the tags name the failure when they cannot. A private
 * operand makes the result private (the taint of docs/language.md "Privacy").
 */
type JoinTable = {
  server: { server: "server"; clients: "mix"; "clients-equal": "mix"; "clients-private": "mix"; local: "server"; member: "server-in-map"; "member-private": "server-in-map" };
  clients: { server: "mix"; clients: "clients"; "clients-equal": "clients"; "clients-private": "clients-private"; local: "clients"; member: "clients-in-map"; "member-private": "clients-in-map" };
  "clients-equal": {
    server: "mix";
    clients: "clients";
    "clients-equal": "clients-equal";
    "clients-private": "clients-private";
    local: "clients-equal";
    member: "clients-in-map";
    "member-private": "clients-in-map";
  };
  "clients-private": {
    server: "mix";
    clients: "clients-private";
    "clients-equal": "clients-private";
    "clients-private": "clients-private";
    local: "clients-private";
    member: "clients-in-map";
    "member-private": "clients-in-map";
  };
  local: { server: "server"; clients: "clients"; "clients-equal": "clients-equal"; "clients-private": "clients-private"; local: "local"; member: "member"; "member-private": "member-private" };
  member: { server: "server-in-map"; clients: "clients-in-map"; "clients-equal": "clients-in-map"; "clients-private": "clients-in-map"; local: "member"; member: "member"; "member-private": "member-private" };
  "member-private": {
    server: "server-in-map";
    clients: "clients-in-map";
    "clients-equal": "clients-in-map";
    "clients-private": "clients-in-map";
    local: "member-private";
    member: "member-private";
    "member-private": "member-private";
  };
};

/** The result placement of an operation on A and B, or a Fail naming the rule they break. */
export type JoinPlacement<Op extends string, A extends Typed, B extends Typed, Path extends string = ""> = Placement extends PlacementOf<A>
  ? PlacementOf<A> | PlacementOf<B>
  : Placement extends PlacementOf<B>
    ? PlacementOf<A> | PlacementOf<B>
    : JoinTable[Unreleased<PlacementOf<A>>][Unreleased<PlacementOf<B>>] extends infer J
      ? J extends "mix"
        ? FailWith<"FT104", { op: Op; a: Print<A>; b: At<Print<B>, Path> }>
        : J extends "server-in-map"
          ? FailWith<"FT102", { got: At<Print<ReadInMap<PlacementOf<A> extends "server" ? A : B>>, Path>; advice: MapAdvice["captured"] }>
          : J extends "clients-in-map"
            ? PlacementOf<A> | PlacementOf<B> extends Member | "clients-equal"
              ? FailWith<"FT105", { op: "broadcast" }>
              : FailWith<"FT106", { got: At<Print<PlacementOf<A> extends Member ? B : A>, Path>; outer: "a per-client function" }>
            : J extends "server"
              ? Releasing<PlacementOf<A> | PlacementOf<B>>
              : J
      : never;

/** A SERVER result of operands at these placements: released (types/tensor.ts ReleasedServer) when one of them is. */
export type Releasing<Ps> = [Extract<Ps, ReleasedServer>] extends [never] ? "server" : ReleasedServer;

/** The SERVER value that was read inside map()'s function: a draw's key (DrawnFrom), else the value itself. */
type ReadInMap<X> = X extends DrawnFrom<infer K> ? (unknown extends K ? X : K) : X;

/** "T" or "T at path" for the message of a leaf found in a tree. */
export type Got<Pair> = Pair extends [infer Path extends string, infer Leaf]
  ? Path extends ""
    ? Print<Leaf>
    : `${Print<Leaf>} at ${Path}`
  : never;

/*
 * The checks below are unions of messages, never when the value passes. A message built from
 * no offending leaf has `never` inside its template, which makes the whole template literal
 * never: only real failures remain. Each check first asks whether any leaf is at a placement it
 * rejects, from the union of the leaves' placements (one walk over the tree, cached per tree
 * type); only then does it walk the tree again for the paths and printed types of the messages,
 * so that code that passes, the common case, does not pay for them.
 */

/** broadcast(): every leaf at the SERVER. */
export type BroadcastCheck<T> = [Exclude<PlacementsOf<T>, "server">] extends [never]
  ? never
  :
      | (LeafPaths<T, Member> extends never ? never : Message<"FT105", { op: "broadcast" }>)
      | Message<"FT101", { got: Got<LeafPaths<T, AtClients | "local">> }>;

/**
 * The reductions and aggregate(): every leaf at the CLIENTS (and of a dtype the reduction
 * takes; a leaf whose dtype is not known statically is checked while tracing).
 */
export type ReduceCheck<Op extends string, T, Accepts extends DType = DType> =
  | ([Exclude<PlacementsOf<T>, AtClients>] extends [never]
      ? PrivacyCheck<Op, T>
      : IsUnknown<PlacementsOf<T>> extends true
        ? Op extends DeclassifyingOp
          ? never
          : UnknownMessage<`${Op}()`, T>
        :
          | (LeafPaths<T, Member> extends never ? never : Message<"FT105", { op: Op }>)
          // A leaf whose placement is a union that may be "server" or "local" is named too (fail closed).
          | Message<"FT103", { op: Op; got: Got<MayBeAt<T, "server" | "local">> }>)
  | (DType extends DTypeOf<Leaves<T>> ? never : DTypeMessage<Op, Exclude<DTypeOf<Leaves<T>>, Accepts>, Accepts>);
type Short = { float32: "f32"; int32: "i32"; bool: "bool" };
type DTypeMessage<Op extends string, Bad extends DType, Accepts extends DType> = [Bad] extends [never]
  ? never
  : DType extends Accepts
    ? never
    : Message<"FT205", { op: Op; want: [Accepts] extends ["float32"] ? "f32" : "f32 or i32"; got: Short[Bad] }>;

/**
 * The aggregators that may take private client data to the SERVER (docs/language.md
 * "Privacy"); src/ir/privacy.ts lists the same at trace time. Allowing one more is adding
 * its name here and its primitive (or its sums' aggregator attribute) there. dpMean and
 * secureMean are dpSum and secureSum followed by a division (src/front/privacy.ts,
 * src/front/secure-mean.ts), and the library's dpQuantile and dpMedian are dpSums
 * (src/lib/algorithms/quantile.ts): tracing sees their inner primitives, so only the types list them.
 */
export type DeclassifyingOp = "dpSum" | "secureSum" | "dpMean" | "secureMean" | "distributedDpSum" | "dpQuantile" | "dpMedian";

/**
 * A declassifying aggregator's result: T at the SERVER, marked released (ReleasedServer) when
 * T holds private data, so that no derivative reaches back through the release (src/front/grad.ts).
 */
export type Release<T> = [Extract<PlacementsOf<T>, PrivatePlacement>] extends [never] ? Moved<T, "server"> : Moved<T, ReleasedServer>;

/**
 * FT109 for a reduction other than a declassifying aggregator of a tree with private leaves.
 * (A tree whose placements are not known statically is FT115: ReduceCheck.)
 */
type PrivacyCheck<Op extends string, T> = Op extends DeclassifyingOp
  ? never
  : "clients-private" extends PlacementsOf<T>
    ? PrivacyMessage<`${Op}()`, T>
    : never;

/** FT109 naming `what` and the private leaves of T that it would release. */
export type PrivacyMessage<What extends string, T> = Message<"FT109", { what: What; got: Got<MayBeAt<T, PrivatePlacement>> }>;

/**
 * Whether placements Ps are not known statically, from a loose annotation (`Tensor<S, D>`,
 * `Tensor`, `Float<S>` outside helper()) or what operations computed from one (every placement
 * at once, as a union of tensors): tsc fails closed on them where a value is released or
 * returned (FT115). Not an `any` (a failed operation's result, or the user's opt-out): that is
 * silent, so that a mistake has one diagnostic.
 */
export type IsUnknown<Ps> = IsAny<Ps> extends true ? false : Placement extends Ps ? true : false;

/** FT115 naming `what` and the leaves of T whose placement tsc cannot know. */
export type UnknownMessage<What extends string, T> = Message<"FT115", { what: What; got: UnknownGot<T> }>;
/** The leaves of T whose placement is not known, printed without one (`f32[3] at [0]`), or "a value" when none is found alone. */
type UnknownGot<T> = [UnknownPaths<T>] extends [never] ? "a value" : UnknownPaths<T>;
type UnknownPaths<T, Path extends string = ""> = IsAny<T> extends true
  ? never
  : [T] extends [Typed]
    ? IsUnknown<PlacementOf<T>> extends true
      ? Path extends ""
        ? PrintMember<ShapeOf<T>, DTypeOf<T>>
        : `${PrintMember<ShapeOf<T>, DTypeOf<T>>} at ${Path}`
      : never
    : T extends readonly unknown[]
      ? number extends T["length"]
        ? UnknownPaths<T[number], `${Path}[number]`>
        : { [K in keyof T & `${number}`]: UnknownPaths<T[K], `${Path}[${K}]`> }[keyof T & `${number}`]
      : T extends object
        ? { [K in keyof T & (string | number)]: UnknownPaths<T[K], Path extends "" ? `${K}` : `${Path}.${K}`> }[keyof T & (string | number)]
        : never;

/**
 * A program's outputs: no private value (a CLIENTS value would leave the clients as it is; a
 * member, one client's), and none whose placement tsc cannot know (FT115: it could be either).
 * Client state (keepOnClients) is the exception: it stays with its client, so a kept leaf may
 * be private. Only programs with a private output pay for the second walk.
 */
export type OutputCheck<T> = IsUnknown<PlacementsOf<T>> extends true
  ? UnknownMessage<"the program's result", T>
  : [Extract<PlacementsOf<T>, PrivatePlacement>] extends [never]
    ? never
    : [Extract<PlacementsOf<Unkept<T>>, PrivatePlacement>] extends [never]
      ? never
      : PrivacyMessage<"the program's result", Unkept<T>>;

/** The phantom key that marks client state (keepOnClients, src/front/client-state.ts); nothing is stored under it. */
export declare const keptOnClients: unique symbol;
/**
 * What a kept leaf carries: any operation's result is a plain tensor again, so only the kept value itself is state.
 *
 * @example
 * type IsState = ReturnType<typeof keepOnClients<typeof heads>> extends KeptMark ? true : false;
 */
export interface KeptMark {
  readonly [keptOnClients]: "client state";
}
/**
 * T with every leaf marked as client state: what keepOnClients returns.
 *
 * @example
 * type KeptHeads = Kept<{ w: Tensor<[200, 10], "float32", "clients"> }>;
 */
// A record with an index signature of `any` (Object.fromEntries of a literal) stays as it is: the
// `any` escape, as everywhere (docs/language.md), rather than a tensor of unknown placement.
export type Kept<T> = IsAny<T> extends true
  ? T
  : string extends keyof T
    ? T
    : T extends Tensor<infer S, infer D, infer P>
      ? Tensor<S, D, P> & KeptMark
      : { -readonly [K in keyof T]: Kept<T[K]> };
/** T with its kept leaves public CLIENTS values: what a program's output check asks of the rest. */
type Unkept<T> = IsAny<T> extends true
  ? T
  : T extends KeptMark
    ? T extends Tensor<infer S, infer D, Placement>
      ? Tensor<S, D, "clients">
      : T
    : T extends Typed
      ? T
      : { [K in keyof T]: Unkept<T[K]> };

/** keepOnClients(): every leaf at the CLIENTS, outside map()'s function (a member is one client's value, not a CLIENTS one). */
export type KeepCheck<T> = [Exclude<PlacementsOf<T>, AtClients>] extends [never]
  ? never
  : IsUnknown<PlacementsOf<T>> extends true
    ? UnknownMessage<"keepOnClients()", T>
    :
        | (LeafPaths<T, Member> extends never ? never : Message<"FT105", { op: "keepOnClients" }>)
        | Message<"FT117", { got: Got<MayBeAt<T, "server" | "local">> }>;

/**
 * The one rule that makes every operation's result as private as its operands: T (the result
 * its own shape/dtype/placement rule gives) with every leaf joined with the private placement
 * of By, where By is the list (a tuple) of ALL the operation's tensor-valued operands, options
 * included (a beta, a bound, a key, a tangent), or whatever a result was computed from (a
 * loop's carry, a gradient's loss). An operation declares its result through it with all its
 * operands, so that no operand can be forgotten (test/privacy/taint-matrix.test.ts checks that
 * every exported operation does).
 *
 * A placement that is not known statically (`Tensor` without one, a failed operation's `any`
 * result) is left alone, in By as in T: a guess here would add a second diagnostic to the first
 * mistake. An unknown one from a loose annotation is refused where it would be released or
 * returned (FT115: ReduceCheck, OutputCheck); an `any` one is silent, and tracing checks it. A SERVER leaf stays at the SERVER: a SERVER
 * value computed from private data is a mistake that its own operation reports.
 */
export type Tainted<T, By> = [PrivateIn<PlacementsOf<By>>] extends [never] ? T : Taint<T, PrivateIn<PlacementsOf<By>>>;
/** The private placement a result takes from operands at these placements, or never. */
type PrivateIn<Ps> = Placement extends Ps ? never : "member-private" extends Ps ? "member-private" : "clients-private" extends Ps ? "clients-private" : never;
type Taint<T, Q extends Placement> = IsAny<T> extends true
  ? T
  : T extends Tensor<infer S, infer D, infer P>
    ? Tensor<S, D, PrivateJoin<P, Q>>
    : T extends Fail
      ? T
      : { -readonly [K in keyof T]: Taint<T[K], Q> };
type PrivateJoin<P extends Placement, Q extends Placement> = Placement extends P
  ? P
  : P extends "server"
    ? P
    : JoinTable[P][Q] extends infer J extends Placement
      ? J
      : P;

/** map()'s arguments: every leaf at the CLIENTS. */
export type MapArgCheck<T> = [Exclude<PlacementsOf<T>, AtClients>] extends [never]
  ? never
  :
      | (LeafPaths<T, Member> extends never ? never : Message<"FT105", { op: "map" }>)
      | MapArgMessage<LeafPaths<T, "server" | "local">>;
type MapArgMessage<Pair> = Pair extends [string, infer Leaf]
  ? Message<"FT102", { got: Got<Pair>; advice: MapAdvice[PlacementOf<Leaf> & keyof MapAdvice] }>
  : never;

/** map()'s function results: local members only. */
export type MapResultCheck<T> = [Extract<PlacementsOf<T>, "server" | AtClients>] extends [never]
  ? never
  : Message<"FT106", { got: Got<LeafPaths<T, "server" | AtClients>>; outer: "map()'s result" }>;

/** Program inputs and atServer/atClients: specs must not be placed twice. */
export type NestCheck<T, Outer extends string> = [Extract<PlacementsOf<T>, "server" | AtClients>] extends [never]
  ? never
  : Message<"FT106", { got: Got<LeafPaths<T, "server" | AtClients>>; outer: Outer }>;

/**
 * What a placement primitive returns: T moved to P; also what a failed call presumably meant,
 * except inside map()'s function (FT105, a member leaf), where T stays a member, so that the
 * function's result reports nothing more (a SERVER or CLIENTS value there is FT106).
 */
export type Moved<T, P extends Placement> = Placement extends PlacementsOf<T>
  ? Place<T, P> // a placement not known statically: checked while tracing
  : [Extract<PlacementsOf<T>, Member>] extends [never]
    ? Place<T, P>
    : Place<T, "member">;

export type MapPlacement<Xs> = Exclude<PlacementOf<LeafTypes<Xs>>, "clients-equal"> extends never
  ? "clients-equal"
  : "clients";

/** map()'s result: its function's members at the CLIENTS, private where they were computed from private members. */
export type MapResult<R, Xs> = [Extract<PlacementsOf<R>, PrivatePlacement>] extends [never]
  ? Place<R, MapPlacement<Xs>>
  : PlaceKeepingPrivacy<R, MapPlacement<Xs>, "clients-private">;

/**
 * What map()'s function receives for an argument: its members, private where the argument is.
 * (Code without private data takes the plain Place: the checker caches PlacementsOf per tree.)
 */
export type MembersOf<X> = [Extract<PlacementsOf<X>, PrivatePlacement>] extends [never]
  ? Place<X, "member">
  : PlaceKeepingPrivacy<X, "member", "member-private">;
