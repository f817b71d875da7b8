/**
 * Operations along one axis: running sums now, lookups and sorting as they are added. Each
 * checks its axis (FT204) and dtype (FT205) in its parameter types and again in the primitive
 * rules when tracing, with the same texts.
 */
import type { Message, Presumed, Validate } from "../../types/errors.js";
import type { Print } from "../../types/print.js";
import type { NormalizeAxis } from "../../types/shape.js";
import type { DTypeOf, ShapeOf, Tensor } from "../../types/tensor.js";
import { ftError } from "../errors/error.js";
import { currentGraph } from "./trace.js";
import { asTracer } from "./values.js";

type NumericCheck<Op extends string, X extends Tensor> = DTypeOf<X> extends "bool"
  ? Message<"FT205", { op: Op; want: "f32 or i32"; got: "bool" }>
  : never;
type AxisCheck<Op extends string, X extends Tensor, Axis extends number> = NormalizeAxis<Axis, ShapeOf<X>["length"]> extends "fail"
  ? Message<"FT204", { op: Op; axis: Axis; a: Print<X>; rank: ShapeOf<X>["length"] }>
  : never;

export interface CumsumOptions {
  /** Leave each entry out of its own sum (the first sum is 0). */
  readonly exclusive?: boolean;
  /** Sum from the end of the axis towards its start. */
  readonly reverse?: boolean;
}

/**
 * Running sums along an axis (default the last), numpy's cumsum: entry i is the sum of the
 * entries up to and including i, or with `exclusive` up to i - 1, or with `reverse` from i to
 * the end. Its gradient is the running sum the other way.
 */
export function cumsum<X extends Tensor, const Axis extends number = -1>(
  x: Validate<X, NumericCheck<"cumsum", X>>,
  axis?: Validate<Axis, AxisCheck<"cumsum", X, Axis>>,
  options?: CumsumOptions,
): Presumed<X> {
  const op = "cumsum";
  for (const key of Object.keys(options ?? {})) {
    if (key !== "exclusive" && key !== "reverse") throw ftError("FT305", { option: `cumsum ${key}`, why: "the options are exclusive and reverse" });
  }
  const attrs = { axis: (axis as number | undefined) ?? -1, exclusive: options?.exclusive === true, reverse: options?.reverse === true };
  return currentGraph(op).emit("cumsum", [asTracer(x, op)], attrs, op)[0] as never;
}
