/**
 * Run-time values of the reference interpreter and the checks that tie them to the IR's
 * value types: a CLIENTS value is an explicit list of member tensors, one per client (the
 * "virtual global tensor" of DrJAX, unbatched); every other value is one tensor. Named dims
 * are bound the first time a value carrying them is seen and must keep that size.
 */
import { ftError } from "../errors/error.js";
import { isAtClients } from "../ir/placement.js";
import { printDim, printShape, printType } from "../ir/print.js";
import type { DimValue, ValueType } from "../ir/types.js";
import type { Tensor } from "./tensor.js";

/** A value at the CLIENTS: members[i] is client i's member. */
export class AtClients {
  constructor(readonly members: readonly Tensor[]) {}
}

export type Value = Tensor | AtClients;

export const isAtClientsValue = (v: Value): v is AtClients => v instanceof AtClients;

/** Sizes of the named dims of one run. */
export class DimBindings {
  private readonly sizes = new Map<string, number>();

  /** Binds name to size, or FT210 when it is already bound to another size. */
  bind(name: string, size: number, what: string): void {
    const bound = this.sizes.get(name);
    if (bound === undefined) this.sizes.set(name, size);
    else if (bound !== size) throw ftError("FT210", { what, dim: name, got: size, want: bound });
  }

  get(name: string): number | undefined {
    return this.sizes.get(name);
  }

  /** A dim of an attribute (reshape, fill): its size, or FT302 when it is a name no input bound. */
  resolve(dim: DimValue, what: string): number {
    if (typeof dim === "number") return dim;
    const size = dim === null ? undefined : this.sizes.get(dim);
    if (size === undefined) throw ftError("FT302", { what, why: `dim ${printDim(dim)} is not bound by the inputs` });
    return size;
  }
}

/** FT210 unless a concrete member shape matches a declared shape, binding its names. */
export function checkShape(shape: readonly number[], declared: readonly DimValue[], dims: DimBindings, what: string): void {
  if (shape.length !== declared.length) {
    throw new Error(`internal: ${what} has shape ${printShape(shape)}, declared ${printShape(declared)}`);
  }
  declared.forEach((want, axis) => {
    const got = shape[axis]!;
    if (typeof want === "number" && want !== got) throw ftError("FT210", { what, dim: axis, got, want });
    if (typeof want === "string") dims.bind(want, got, what);
  });
}

/**
 * Checks a value against its IR type: placement kind, member count, dtype and shape (named
 * dims bound). A mismatch other than a dim size is an interpreter or IR bug, not a user error.
 */
export function checkValue(value: Value, type: ValueType, clients: () => number, dims: DimBindings, what: string): void {
  const members = isAtClientsValue(value) ? value.members : [value];
  if (isAtClients(type.placement) !== isAtClientsValue(value)) {
    throw new Error(`internal: ${what} should be ${printType(type)}, got ${isAtClientsValue(value) ? "a CLIENTS value" : "one tensor"}`);
  }
  if (isAtClientsValue(value) && members.length !== clients()) {
    throw new Error(`internal: ${what} has ${members.length} members for ${clients()} clients`);
  }
  for (const member of members) {
    if (member.dtype !== type.dtype) throw new Error(`internal: ${what} is ${member.dtype}, declared ${printType(type)}`);
    checkShape(member.shape, type.shape, dims, what);
  }
}

/** The members of a CLIENTS value (an IR whose types were checked never passes anything else). */
export function membersOf(value: Value, what: string): readonly Tensor[] {
  if (!isAtClientsValue(value)) throw new Error(`internal: ${what} takes a CLIENTS value, got one tensor`);
  return value.members;
}

/** A value that is one tensor (not at the CLIENTS). */
export function oneTensor(value: Value, what: string): Tensor {
  if (isAtClientsValue(value)) throw new Error(`internal: ${what} takes one tensor, got a CLIENTS value`);
  return value;
}
