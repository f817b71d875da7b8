/**
 * The placement of what a library function computes from its arguments, at type level: the
 * join of every argument's placement, private where any argument is (docs/language.md
 * "Privacy"). The library's functions are written once for every placement through loose
 * operations (loose.ts); these types give their public signatures the placement the same
 * operations compute while tracing, so that private data in gives private data out.
 *
 * (Kept apart from types.ts, which re-exports them, because models use them and types.ts uses
 * models.)
 */
import type { Failures } from "../../../types/errors.js";
import type { JoinPlacement } from "../../../types/placement.js";
import type { AtClients, Leaves, Member, Place, Placement, PlacementsOf, Typed } from "../../../types/tensor.js";

/**
 * The placement of a value computed from values at the placements U: constants ("local") join
 * anything; members stay members, CLIENTS values stay at the CLIENTS, SERVER values at the
 * SERVER, each private where any operand is private. `never` where they cannot meet (JoinCheck
 * then says why); `Placement` where a placement is not known statically (checked while
 * tracing).
 *
 * @example
 * import { type Joined } from "fedtensor/lib";
 * const atServer: Joined<"server" | "local"> = "server";
 * const privateMembers: Joined<"member" | "member-private"> = "member-private";
 */
export type Joined<U extends Placement> = Placement extends U
  ? Placement
  : [Exclude<U, "local">] extends [never]
    ? "local"
    : [Exclude<U, "local" | Member>] extends [never]
      ? "member-private" extends U
        ? "member-private"
        : "member"
      : [Exclude<U, "local" | AtClients>] extends [never]
        ? "clients-private" extends U
          ? "clients-private"
          : "clients" extends U
            ? "clients"
            : "clients-equal"
        : [Exclude<U, "local" | "server">] extends [never]
          ? "server"
          : never;

/**
 * The joined placement of every leaf of the trees in From (a tuple of trees, or one tree).
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type JoinedOf } from "fedtensor/lib";
 * const where: JoinedOf<{ a: Tensor<[2], "float32", "clients">; b: Tensor<[], "float32", "local"> }> = "clients";
 */
export type JoinedOf<From> = Joined<PlacementsOf<From> & Placement>;

/**
 * The tree T (its structure, shapes and dtypes) as computed from From: every leaf at From's joined placement.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type ComputedFrom } from "fedtensor/lib";
 * type Trained = ComputedFrom<{ w: Tensor<[3], "float32"> }, [Tensor<[3], "float32", "member">, Tensor<[], "float32", "member-private">]>; // { w: f32[3] on private members }
 */
export type ComputedFrom<T, From> = Place<T, JoinedOf<From>>;

/**
 * The FT messages (FT102, FT104, FT106, as the operation that fails would report them) for
 * arguments whose placements cannot meet, never when they can. Computed only on failure:
 * code that passes pays for the union of placements alone.
 *
 * @example
 * import { type Tensor } from "fedtensor";
 * import { type JoinCheck } from "fedtensor/lib";
 * type Fine = JoinCheck<"add", [Tensor<[3], "float32", "server">, Tensor<[3], "float32", "local">]>; // never: they meet at the SERVER
 * type Refused = JoinCheck<"add", [Tensor<[3], "float32", "server">, Tensor<[3], "float32", "clients">]>; // the FT message add() would give
 */
export type JoinCheck<Op extends string, Args> = [JoinedOf<Args>] extends [never] ? PairFailures<Op, Leaves<Args>, Leaves<Args>> : never;
type PairFailures<Op extends string, A, B> = A extends Typed ? (B extends Typed ? Failures<JoinPlacement<Op, A, B>> : never) : never;
