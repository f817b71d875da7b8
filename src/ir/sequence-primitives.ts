/**
 * Typing rules of the primitives that work along one axis of a tensor: cumulative sums now,
 * lookups and sorting as they are added. Attributes hold the axis as written (negative
 * counts from the end); every rule checks it against the operand's rank (FT204).
 */
import { elementwiseDType } from "./dtypes.js";
import { printType } from "./print.js";
import * as shapes from "./shapes.js";
import type { PrimitiveRule } from "./types.js";

export const sequencePrimitives: Record<string, PrimitiveRule> = {
  /** Running sums along attrs.axis; attrs.exclusive leaves each entry out of its own sum, attrs.reverse sums from the end. */
  cumsum: {
    infer: ([x], attrs, op) => {
      shapes.normalizeAxis(attrs.axis as number, x!.shape.length, op, printType(x!));
      return [{ ...x!, dtype: elementwiseDType(op, "numeric", x!.dtype) }];
    },
  },
};
