/**
 * The static types of FedTensor values: tensors with shape, dtype and placement, specs that
 * declare a program's inputs, and trees (records and arrays) of either.
 */

/**
 * A dim: a number literal, a named symbolic dim such as "B" (equal names agree), or `number` (known at run time).
 *
 * @example
 * const dims: Dim[] = [784, "B", 10];
 */
export type Dim = number | string;
/**
 * A tensor's shape: a readonly tuple of dims.
 *
 * @example
 * const shape: Shape = ["B", 784]; // a named dim and a number
 */
export type Shape = readonly Dim[];

/**
 * A tensor's element type: float32, int32 or bool.
 *
 * @example
 * const dtype: DType = "int32";
 * program({ y: atClients(i32(["N"])) }, ({ y }) => reduceSum(map((ym) => sum(cast(ym, "float32")), y)));
 */
export type DType = "float32" | "int32" | "bool";
export type NumericDType = "float32" | "int32";

/**
 * Where a value lives (SPEC section 1).
 * - `server`: one copy at the coordinator (`T@SERVER`).
 * - `clients`: one member per client, members may differ (`{T}@CLIENTS`).
 * - `clients-equal`: one member per client, all equal (`T@CLIENTS`), what broadcast() returns.
 * - `local`: no placement: constants.
 * - `member`: no placement either, but known to be one client's member, as seen inside map()'s
 *   function; kept apart from `local` so that broadcast/reduce there is FT105, not FT101/FT103.
 *
 * Privacy refines the CLIENTS side of this lattice (docs/language.md "Privacy"):
 * - `clients-private`: a CLIENTS value computed from a private input (`atClients(spec, { private: true })`);
 * - `member-private`: one client's member of such a value, as seen inside map()'s function.
 * Every operation joins its operands' placements (types/placement.ts), so the taint follows the
 * data through the existing rules; only the aggregators that declassify (dpSum, secureSum)
 * take it to the SERVER, and anything else that would is FT109.
 * @example
 * const where: Placement = "clients"; // {T}@CLIENTS
 * type ServerLogits = Tensor<["B", 10], "float32", "server">;
 */
export type Placement = "server" | "clients" | "clients-equal" | "local" | "member" | PrivatePlacement;
export type PrivatePlacement = "clients-private" | "member-private";
export type PlacedAt = "server" | AtClients;
export type AtClients = "clients" | "clients-equal" | "clients-private";
export type Unplaced = "local" | Member;
/** One client's member inside a per-client function, private or not. */
export type Member = "member" | "member-private";

/**
 * A SERVER value computed from a release of private client data (dpSum, secureSum and their
 * means): "server" marked by a phantom brand, so that it is a SERVER value for every rule
 * (it extends "server", prints as @SERVER and goes where "server" goes) while the derivative
 * rules can tell it apart. Every operation's result carries the mark when an operand does
 * (types/placement.ts JoinPlacement, and the rules that keep their operand's placement);
 * stopGradient drops it, since no derivative passes there. A derivative of a released value
 * with respect to a value the release was computed from is the mechanism's un-noised,
 * unmasked input: FT109 (src/front/grad.ts).
 * @example
 * type Released = Tensor<[10], "float32", ReleasedServer>; // what dpSum returns for an f32[10] tree
 */
export type ReleasedServer = "server" & { readonly [releasedMark]: true };
export declare const releasedMark: unique symbol;
/** P without the release mark: what the placement tables are keyed by. */
export type Unreleased<P> = P extends "server" ? ("server" extends P ? P : "server") : P;

/** The phantom key that carries a value's static type; nothing is stored under it. */
export declare const staticType: unique symbol;
export type StaticType = typeof staticType;

export interface TypeInfo<S extends Shape = Shape, D extends DType = DType, P extends Placement = Placement> {
  readonly shape: S;
  readonly dtype: D;
  readonly placement: P;
}

/**
 * The phantom key under which a tensor says whether it holds private client data; nothing is
 * stored under it. The public aliases of types/helper.ts (AtClients, Member) and a learning
 * rate require it absent with a message type (PublicOnly), so that a private value given to
 * them fails with FT109 in the text plain tsc prints, where the placements alone would give a
 * bare "'clients-private' is not assignable to 'clients'".
 */
export declare const privateData: unique symbol;
/** What a tensor at P carries under privateData: a mark when P is private. */
export type PrivacyMark<P extends Placement> = P extends PrivatePlacement ? "private client data" : undefined;

/** A traced tensor value inside program(); the runtime fields are what the tracer knows. */
export interface Tensor<S extends Shape = Shape, D extends DType = DType, P extends Placement = Placement> {
  readonly [staticType]: TypeInfo<S, D, P>;
  readonly [privateData]?: PrivacyMark<P>;
  /** Dims as traced: numbers, names, or null where the size is known only at run time. */
  readonly shape: readonly (number | string | null)[];
  readonly dtype: D;
  readonly placement: P;
}

/**
 * A declaration of a program input: carries the static type, holds no data.
 *
 * @example
 * const spec: TensorSpec<[784, 10], "float32", "local"> = f32([784, 10]);
 * program({ w: atServer(spec) }, ({ w }) => broadcast(w));
 */
export interface TensorSpec<S extends Shape = Shape, D extends DType = DType, P extends Placement = Placement> {
  readonly [staticType]: TypeInfo<S, D, P>;
  readonly kind: "spec";
  readonly shape: readonly (number | string | null)[];
  readonly dtype: D;
  readonly placement: P;
}

/**
 * The phantom key under which a draw from a SERVER key records that key (src/front/random.ts):
 * when the draw meets a member inside map()'s function, FT102 names the key that was read
 * there, not the draw made from it. Nothing is stored under it.
 */
export declare const drawnFrom: unique symbol;
/**
 * A phantom mark on a random draw naming the key it came from, which lets the types tell a draw
 * from a key shared by every client (FT317) from a per-client one.
 *
 * @example
 * type Drawn = Tensor<[3], "float32", "server"> & DrawnFrom<Tensor<[2], "int32", "server">>; // a draw from a SERVER key
 */
export interface DrawnFrom<K> {
  readonly [drawnFrom]?: K;
}

/** Anything with a static type: a tensor or a spec. */
export type Typed = { readonly [staticType]: TypeInfo };

/**
 * A tree of leaves (tensors by default): a leaf, an array of trees, or a record of trees, as model
 * parameters and batches are. Placement primitives, elementwise ops and grad work on whole trees.
 *
 * @example
 * const params: Tree = { w: zeros([784, 10]), b: zeros([10]) };
 */
export type Tree<Leaf = Tensor> = Leaf | readonly Tree<Leaf>[] | { readonly [key: string]: Tree<Leaf> };
export type SpecTree = Tree<TensorSpec>;

/**
 * The constraint for generic tree parameters. Tree itself is recursive, and a recursive
 * constraint makes the checker expand mapped types over it without end (TS2589); the checks
 * in the parameter types reject what is not a tree of FedTensor values.
 */
export type TreeLike = object;

export type ShapeOf<T> = T extends { readonly [staticType]: TypeInfo<infer S, DType, Placement> } ? S : never;
export type DTypeOf<T> = T extends { readonly [staticType]: TypeInfo<Shape, infer D, Placement> } ? D : never;
/**
 * A value's placement; `any` for a value typed `any` (a failed operation's result, or the
 * user's opt-out), so that what operations compute from it is a tensor at placement `any`:
 * a leaf that opted out of the checks as its operand did (Leaves, LeafPaths skip it), not one
 * whose placement a loose annotation left unknown (`Placement`, which tsc fails closed on).
 */
export type PlacementOf<T> = IsAny<T> extends true ? any : T extends { readonly [staticType]: TypeInfo<Shape, DType, infer P> } ? P : never;

/**
 * True for `any`. A value typed `any` opts out of the static checks, as everywhere in
 * TypeScript (tracing still checks it); the recursive tree types stop at it instead of
 * walking `any`'s keys without end (TS2589).
 */
export type IsAny<T> = 0 extends 1 & T ? true : false;

/** Whether a typed value's placement is `any`: it was computed from an `any` (PlacementOf). */
type OptedOut<T> = IsAny<PlacementOf<T>>;

/** Union of the leaves of a tree (those that opted out with `any` left out). */
export type Leaves<T> = IsAny<T> extends true
  ? never
  : T extends Typed
  ? OptedOut<T> extends true
    ? never
    : T
  : T extends readonly (infer E)[]
    ? Leaves<E>
    : T extends object
      ? Leaves<T[keyof T]>
      : never;

/** Union of the placements of a tree's leaves. */
export type PlacementsOf<T> = PlacementOf<Leaves<T>>;

/** The same tree with every leaf moved to placement P. */
export type Place<T, P extends Placement> = IsAny<T> extends true
  ? T
  : T extends TensorSpec<infer S, infer D, Placement>
  ? TensorSpec<S, D, P>
  : T extends Tensor<infer S, infer D, Placement>
    ? Tensor<S, D, P>
    : { -readonly [K in keyof T]: Place<T[K], P> };

/**
 * Place<T, P>, except that leaves carrying private data go to PrivateP: how map() moves its
 * arguments to members and its results back to the CLIENTS without losing the taint (a leaf
 * whose placement is a union with a private member is private). A leaf
 * whose placement is not known statically stays unknown (it may be private: tsc fails closed
 * on it where it is released, FT115).
 */
export type PlaceKeepingPrivacy<T, P extends Placement, PrivateP extends PrivatePlacement> = IsAny<T> extends true
  ? T
  : T extends TensorSpec<infer S, infer D, infer Q>
    ? TensorSpec<S, D, Q extends PrivatePlacement ? PrivateP : P>
    : T extends Tensor<infer S, infer D, infer Q>
      ? Tensor<S, D, Placement extends Q ? Q : [Extract<Q, PrivatePlacement>] extends [never] ? P : PrivateP>
      : { -readonly [K in keyof T]: PlaceKeepingPrivacy<T[K], P, PrivateP> };

/**
 * The traced values a spec tree declares.
 *
 * @example
 * const specs = { w: atServer(f32([10])), x: atClients(f32(["B", 10])) };
 * type Values = ValueOf<typeof specs>; // { w: Tensor<[10], "float32", "server">; x: ... }
 */
export type ValueOf<T> = IsAny<T> extends true
  ? T
  : T extends TensorSpec<infer S, infer D, infer P>
  ? Tensor<S, D, P>
  : { -readonly [K in keyof T]: ValueOf<T[K]> };

/**
 * The spec tree that declares values of a traced tree.
 *
 * @example
 * type Spec = SpecOf<Tensor<[10], "float32", "server">>; // TensorSpec<[10], "float32", "server">
 */
export type SpecOf<T> = IsAny<T> extends true
  ? T
  : T extends Tensor<infer S, infer D, infer P>
  ? TensorSpec<S, D, P>
  : { -readonly [K in keyof T]: SpecOf<T[K]> };

/**
 * Tree paths of the leaves whose placement is in P, as "[path, leaf]" pairs. Every container a
 * tree type can be is walked: tuples by index, arrays (`T[]`, `readonly T[]`) and index
 * signatures (`Object.fromEntries`' `{ [k: string]: T }`) as one element at `[number]` or
 * `[string]`, records by their string and numeric keys (`{ 0: a, 1: b }`), as tracing walks them.
 */
export type LeafPaths<T, P extends Placement, Path extends string = "", Overlap extends boolean = false> = IsAny<T> extends true
  ? never
  : T extends Typed
  ? OptedOut<T> extends true
    ? never
    : Overlap extends true
      ? [Extract<PlacementOf<T>, P>] extends [never]
        ? never
        : [Path, Tensor<ShapeOf<T>, DTypeOf<T>, Extract<PlacementOf<T>, P>>]
      : PlacementOf<T> extends P
        ? [Path, T]
        : never
  : T extends readonly unknown[]
    ? number extends T["length"]
      ? LeafPaths<T[number], P, `${Path}[number]`, Overlap>
      : { [K in keyof T & `${number}`]: LeafPaths<T[K], P, `${Path}[${K}]`, Overlap> }[keyof T & `${number}`]
    : T extends object
      ? { [K in keyof T & Key]: LeafPaths<T[K], P, KeyPath<Path, K>, Overlap> }[keyof T & Key]
      : never;

/**
 * The leaves that may be at a placement in P: those whose placement is in P, and those whose
 * placement is a union with a member in P (`Tensor<S, D, "clients" | "clients-private">` may be
 * private), printed at the placement in P it may have. What the privacy checks name, so that
 * a union does not hide a private leaf.
 */
export type MayBeAt<T, P extends Placement> = LeafPaths<T, P, "", true>;

/** The keys of a record that hold its values (symbols are phantoms: the runtime walks string keys, numeric ones included). */
type Key = string | number;
/** The path of the value at key K below Path as tracing prints it (`a.b`, `a.0`), or `a[string]` for an index signature. */
type KeyPath<Path extends string, K extends Key> = string extends K
  ? `${Path}[string]`
  : number extends K
    ? `${Path}[number]`
    : Path extends ""
        ? `${K}`
        : `${Path}.${K}`;

/** Union of the leaves that LeafPaths walks, without their paths. */
export type LeafTypes<T> = IsAny<T> extends true
  ? never
  : T extends Typed
  ? OptedOut<T> extends true
    ? never
    : T
  : T extends readonly unknown[]
    ? number extends T["length"]
      ? LeafTypes<T[number]>
      : { [K in keyof T & `${number}`]: LeafTypes<T[K]> }[keyof T & `${number}`]
    : T extends object
      ? { [K in keyof T & Key]: LeafTypes<T[K]> }[keyof T & Key]
      : never;
