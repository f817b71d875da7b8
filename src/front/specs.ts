/**
 * Spec values: declare a program's inputs once, with their static types, and let inference do
 * the rest. `f32(["B", 784])` is a float32 tensor of B rows; `atClients(spec)` places a spec
 * (or a tree of specs) at the clients, `atServer(spec)` at the server.
 */
import { ftError } from "../errors/error.js";
import { printType } from "../ir/print.js";
import type { DType, Placement, ValueType } from "../ir/types.js";
import type { NestCheck, Validate } from "../../types/placement.js";
import type { Dim, Place, TensorSpec, TypeInfo, staticType } from "../../types/tensor.js";
import { describeValue, flatten, unflatten } from "./tree.js";

/** Dims as written in a spec: a size, a name, or null for a size known only at run time. */
export type SpecShape = readonly (number | string | null)[];
export type SpecDims<S extends SpecShape> = { -readonly [K in keyof S]: S[K] extends null ? number : S[K] & Dim };

export class Spec implements ValueType {
  declare readonly [staticType]: TypeInfo;
  readonly kind = "spec";
  constructor(
    readonly shape: readonly (number | string | null)[],
    readonly dtype: DType,
    readonly placement: Placement,
    isPrivate = false,
  ) {
    if (isPrivate) this.private = true;
  }
  /** A private CLIENTS input (docs/language.md "Privacy"); absent otherwise. */
  readonly private?: true;
  toString(): string {
    return printType(this);
  }
}

export const isSpec = (x: unknown): x is Spec => x instanceof Spec;

function makeSpec(shape: SpecShape, dtype: DType, op: string): Spec {
  if (!Array.isArray(shape)) {
    throw ftError("FT302", { what: `${op}() shape`, why: `expected an array of dims, such as ["B", 784], got ${describeValue(shape)}` });
  }
  for (const d of shape) {
    const ok = d === null || (typeof d === "string" && d.length > 0) || (Number.isInteger(d) && (d as number) >= 0);
    if (!ok) throw ftError("FT302", { what: `spec dim ${String(d)}`, why: "dims are sizes >= 0, names, or null" });
  }
  return new Spec([...shape], dtype, "local");
}

/**
 * A float32 tensor spec of the given shape: dims are numbers, names such as "B" (equal names
 * agree) or `number` (known at run time). Specs declare a program's inputs.
 *
 * @placement none: a spec is local until atServer or atClients places it.
 */
export function f32<const S extends SpecShape>(shape: S): TensorSpec<SpecDims<S>, "float32", "local"> {
  return makeSpec(shape, "float32", "f32") as never;
}
/**
 * An int32 tensor spec of the given shape (labels, indices, keys), as f32's.
 *
 * @placement none: a spec is local until atServer or atClients places it.
 */
export function i32<const S extends SpecShape>(shape: S): TensorSpec<SpecDims<S>, "int32", "local"> {
  return makeSpec(shape, "int32", "i32") as never;
}
/**
 * A bool tensor spec of the given shape (masks), as f32's.
 *
 * @placement none: a spec is local until atServer or atClients places it.
 * @example
 * program({ keep: atClients(bool(["N"])), x: atClients(f32(["N"])) }, ({ keep, x }) => reduceSum(map((k, xm) => sum(where(k, xm, 0)), keep, x)));
 */
export function bool<const S extends SpecShape>(shape: S): TensorSpec<SpecDims<S>, "bool", "local"> {
  return makeSpec(shape, "bool", "bool") as never;
}

function place(tree: unknown, placement: Placement, outer: string, isPrivate = false): unknown {
  const { leaves, def } = flatten(tree, isSpec, `${outer} argument`, "specs");
  for (const leaf of leaves) {
    if (leaf.placement !== "local") throw ftError("FT106", { got: printType(leaf), outer });
  }
  return unflatten(
    def,
    leaves.map((s) => (isPrivate ? new Spec(s.shape, s.dtype, placement, true) : new Spec(s.shape, s.dtype, placement))),
  );
}

/**
 * Places a spec (or a tree of specs) at the SERVER: the program input is one value held by the
 * coordinator, such as the model parameters or the learning rate.
 *
 * @placement a spec (tree) to `T@SERVER`: one copy at the coordinator. A spec placed already is
 * FT106.
 */
export function atServer<const T extends object>(spec: Validate<T, NestCheck<T, "atServer()">>): Place<T, "server"> {
  return place(spec, "server", "atServer()") as never;
}
/**
 * atClients()'s options: `private` marks the clients' data private, so what is computed from it
 * leaves the clients only through a releasing aggregator.
 *
 * @example
 * program({ x: atClients(f32([10]), { private: true } satisfies ClientsOptions) }, ({ x }) => x);
 */
export interface ClientsOptions {
  /**
   * The clients' data is private: whatever is computed from it reaches the SERVER or the
   * program's outputs only through a DP or secure aggregator (FT109 otherwise).
   */
  readonly private?: boolean;
}

/**
 * The placement of a CLIENTS input declared with options O. Fail closed: the input is public
 * only where tsc knows `private` is absent or false; `{ private: true }` held in a variable
 * (whose type widens to `boolean`) or any other flag tsc cannot see declares it private, so
 * tsc rejects what tracing might (docs/language.md "Privacy").
 */
export type ClientsPlacement<O> = "private" extends keyof O ? ([O["private" & keyof O]] extends [false | undefined] ? "clients" : "clients-private") : "clients";

/**
 * Places a spec (tree) at the clients: `{T}@CLIENTS`, or `{T}@CLIENTS(private)` with `{ private: true }`.
 *
 * @placement a spec (tree) to `{T}@CLIENTS`, or `{T}@CLIENTS(private)` with `{ private: true }`; a
 * spec placed already is FT106.
 */
export function atClients<const T extends object, const O extends ClientsOptions = {}>(
  spec: Validate<T, NestCheck<T, "atClients()">>,
  options?: O,
): Place<T, ClientsPlacement<O>> {
  if (options !== undefined && (typeof options !== "object" || options === null || Object.keys(options).some((k) => k !== "private"))) {
    throw ftError("FT302", { what: "atClients() options", why: `expected { private: boolean }, got ${describeValue(options)}` });
  }
  if (options?.private !== undefined && typeof options.private !== "boolean") {
    throw ftError("FT302", { what: "atClients() option private", why: `expected true or false, got ${describeValue(options.private)}` });
  }
  return place(spec, "clients", "atClients()", options?.private === true) as never;
}
