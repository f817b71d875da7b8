/**
 * Printing types in the notation of SPEC section 1, at type level:
 * `f32[784,10]@SERVER`, `{f32[B,784]}@CLIENTS` (members may differ), `f32[10]@CLIENTS`
 * (all members equal), `{f32[B,784]}@CLIENTS(private)` (computed from private client data),
 * `f32[10]` (local), `?` for a dim known only at run time.
 * src/ir/print.ts prints the same text at run time; tests keep the two in step.
 */
import type { DType, Placement, Shape, TypeInfo, Typed, staticType } from "./tensor.js";

type ShortDType = { float32: "f32"; int32: "i32"; bool: "bool" };

export type PrintDim<D> = number extends D ? "?" : string extends D ? "?" : D extends number | string ? `${D}` : "?";

export type PrintShape<S extends Shape, Acc extends string = ""> = number extends S["length"]
  ? "..."
  : S extends readonly [infer H, ...infer R extends Shape]
    ? PrintShape<R, Acc extends "" ? PrintDim<H> : `${Acc},${PrintDim<H>}`>
    : Acc;

/** A dtype or placement not known statically prints as one "?" or nothing, not as a union of texts (one message per mistake). */
export type PrintMember<S extends Shape, D extends DType> = `${DType extends D ? "?" : ShortDType[D]}[${PrintShape<S>}]`;

export type PrintPlaced<M extends string, P extends Placement> = Placement extends P
  ? M
  : P extends "server"
  ? `${M}@SERVER`
  : P extends "clients"
    ? `{${M}}@CLIENTS`
    : P extends "clients-equal"
      ? `${M}@CLIENTS`
      : P extends "clients-private"
        ? `{${M}}@CLIENTS(private)`
        : M;

/** The printed type of a tensor or spec. */
export type Print<T> = T extends { readonly [staticType]: TypeInfo<infer S, infer D, infer P> }
  ? PrintPlaced<PrintMember<S, D>, P>
  : "?";

/** An operand as messages show it: a printed type, a printed shape, or text as given. */
export type PrintOperand<X> = X extends string
  ? X
  : X extends Typed
    ? Print<X>
    : X extends Shape
      ? `[${PrintShape<X>}]`
      : "?";

/**
 * "text at path" for a message about one leaf of a tree (the path of the leaf in the second
 * operand, which tsc reports on); the text alone for a lone tensor. src/front/elementwise.ts
 * adds the same to the same parameter of each code at trace time.
 */
export type At<Text extends string, Path extends string> = Path extends "" ? Text : `${Text} at ${Path}`;
