/**
 * Dtype rules at run time, mirroring types/ops.ts (ElementwiseDType).
 */
import { ftError } from "../errors/error.js";
import type { DType } from "./types.js";

export type DTypeClass = "numeric" | "float" | "compare" | "equality" | "logical" | "any";

const accepted: Record<DTypeClass, readonly DType[]> = {
  numeric: ["float32", "int32"],
  float: ["float32"],
  compare: ["float32", "int32"],
  equality: ["float32", "int32", "bool"],
  logical: ["bool"],
  any: ["float32", "int32", "bool"],
};
const wanted: Record<DTypeClass, string> = {
  numeric: "f32 or i32",
  float: "f32",
  compare: "f32 or i32",
  equality: "f32, i32 or bool",
  logical: "bool",
  any: "any",
};
export const shortDType: Record<DType, string> = { float32: "f32", int32: "i32", bool: "bool" };

/** The result dtype of an elementwise operation, or FT205. */
export function elementwiseDType(op: string, cls: DTypeClass, a: DType, b: DType = a): DType {
  if (a !== b) throw ftError("FT205", { op, want: shortDType[a], got: shortDType[b] });
  if (!accepted[cls].includes(a)) throw ftError("FT205", { op, want: wanted[cls], got: shortDType[a] });
  return cls === "compare" || cls === "equality" ? "bool" : a;
}

/** Operands that must share a dtype without other constraints (where, concat). */
export function requireSameDType(op: string, a: DType, b: DType): DType {
  if (a !== b) throw ftError("FT205", { op, want: shortDType[a], got: shortDType[b] });
  return a;
}

export function requireDType(op: string, got: DType, want: DType): void {
  if (got !== want) throw ftError("FT205", { op, want: shortDType[want], got: shortDType[got] });
}
