/**
 * Turning what users pass to operations into traced values: tracers as they are, plain
 * numbers as local scalar constants that take the other operand's dtype (as JAX's weak types do).
 */
import { ftError } from "../errors/error.js";
import type { DType } from "../ir/types.js";
import { currentGraph, isTracer, type Tracer } from "./trace.js";
import { describeValue } from "./tree.js";

export function constant(value: number, dtype: DType, op: string): Tracer {
  return currentGraph(op).emit("constant", [], { value, dtype, shape: [] }, op)[0]!;
}

/** FT302 unless a user passed a function where one belongs (a program's body, map()'s f). */
export function expectFunction(f: unknown, what: string): void {
  if (typeof f !== "function") throw ftError("FT302", { what, why: `expected a function, got ${describeValue(f)}` });
}

/** A tracer, or a number made a scalar constant of dtype `like` has. */
export function asTracer(x: unknown, op: string, like?: Tracer): Tracer {
  if (isTracer(x)) return x;
  if (typeof x === "number") return constant(x, like?.dtype ?? "float32", op);
  throw ftError("FT108", { op, why: `got ${describeValue(x)} where a traced tensor or a number belongs` });
}
