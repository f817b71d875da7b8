/**
 * Typing rules of the primitives that work along one axis of a tensor: cumulative sums now,
 * lookups and sorting as they are added. Attributes hold the axis as written (negative
 * counts from the end); every rule checks it against the operand's rank (FT204).
 */
import { elementwiseDType, requireDType } from "./dtypes.js";
import { joinPlacement, joinPlacements } from "./placement.js";
import { printType } from "./print.js";
import * as shapes from "./shapes.js";
import type { PrimitiveRule, ValueType } from "./types.js";

/** attrs.axis of x as 0..rank-1, or FT204. */
const axisOf = (axis: unknown, x: ValueType, op: string): number => shapes.normalizeAxis(axis as number, x.shape.length, op, printType(x));

export const sequencePrimitives: Record<string, PrimitiveRule> = {
  /** Running sums along attrs.axis; attrs.exclusive leaves each entry out of its own sum, attrs.reverse sums from the end. */
  cumsum: {
    infer: ([x], attrs, op) => {
      axisOf(attrs.axis, x!, op);
      return [{ ...x!, dtype: elementwiseDType(op, "numeric", x!.dtype) }];
    },
  },
  /**
   * Rows of x along attrs.axis picked by int32 indices: x[...pre, n, ...post] and i[...I] to
   * [...pre, ...I, ...post]. An index outside [0, n) picks a row of zeros, as a lookup by
   * oneHot(i, n) would.
   */
  take: {
    infer: ([x, indices], attrs, op) => {
      const axis = axisOf(attrs.axis, x!, op);
      const dtype = elementwiseDType(op, "numeric", x!.dtype);
      requireDType(op, indices!.dtype, "int32");
      const shape = [...x!.shape.slice(0, axis), ...indices!.shape, ...x!.shape.slice(axis + 1)];
      return [{ shape, dtype, placement: joinPlacement(op, x!, indices!) }];
    },
  },
  /**
   * The transpose of take (its gradient): inputs (cotangent, indices, like x). Each row of the
   * cotangent is added into the row of x its index picked; indices outside [0, n) add nothing.
   */
  take_grad: {
    infer: ([ct, indices, like], attrs, op) => {
      axisOf(attrs.axis, like!, op);
      requireDType(op, indices!.dtype, "int32");
      return [{ ...like!, placement: joinPlacements(op, [ct!, indices!, like!]) }];
    },
  },
};
