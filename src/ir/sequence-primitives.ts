/**
 * Typing rules of the primitives that work along one axis of a tensor: running sums, lookups
 * (shared indices, take; or per lane, take_along) with their scatter-add transposes, and
 * sorting. Attributes hold the axis as written (negative
 * counts from the end); every rule checks it against the operand's rank (FT204).
 */
import { ftError } from "../errors/error.js";
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
  /**
   * x[...pre, n, ...post] and per-lane indices i[...pre, m, ...post] to out[..., j, ...] =
   * x[..., i[..., j, ...], ...] (numpy's take_along_axis); an index outside [0, n) gives 0.
   */
  take_along: {
    infer: ([x, indices], attrs, op) => {
      const axis = axisOf(attrs.axis, x!, op);
      const dtype = elementwiseDType(op, "numeric", x!.dtype);
      requireDType(op, indices!.dtype, "int32");
      requireLanes(op, x!, indices!, axis);
      return [{ shape: indices!.shape, dtype, placement: joinPlacement(op, x!, indices!) }];
    },
  },
  /** The transpose of take_along: inputs (cotangent, indices, like x); each entry added into the lane position its index names. */
  take_along_grad: {
    infer: ([ct, indices, like], attrs, op) => {
      requireLanes(op, like!, indices!, axisOf(attrs.axis, like!, op));
      requireDType(op, indices!.dtype, "int32");
      return [{ ...like!, placement: joinPlacements(op, [ct!, indices!, like!]) }];
    },
  },
  /**
   * Sorts each lane along attrs.axis, ascending or with attrs.descending, keeping equal entries
   * in their order; outputs the first attrs.k sorted entries (all when k is null) and their
   * int32 positions in x.
   */
  sort: {
    infer: ([x], attrs, op) => {
      const axis = axisOf(attrs.axis, x!, op);
      const dtype = elementwiseDType(op, "numeric", x!.dtype);
      const n = x!.shape[axis]!;
      const k = attrs.k as number | null;
      if (k !== null && (!Number.isInteger(k) || k < 0 || (typeof n === "number" && k > n))) {
        throw ftError("FT302", { what: `${op}() k`, why: `${String(k)} is not a count of entries in 0..${n ?? "?"} of ${printType(x!)}` });
      }
      const shape = x!.shape.map((d, i) => (i === axis && k !== null ? k : d));
      return [
        { shape, dtype, placement: x!.placement },
        { shape, dtype: "int32", placement: x!.placement },
      ];
    },
  },
};

/** FT201 unless indices have x's dims off the axis (take_along's lanes). */
function requireLanes(op: string, x: ValueType, indices: ValueType, axis: number): void {
  const rank = Math.max(x.shape.length, indices.shape.length);
  const off = [...Array(rank).keys()].find((i) => i !== axis && (x.shape[i] === undefined || indices.shape[i] === undefined || !shapes.dimsAgree(x.shape[i]!, indices.shape[i]!)));
  if (off !== undefined) {
    const dim = (t: ValueType) => (t.shape[off] === undefined ? "(none)" : String(t.shape[off] ?? "?"));
    throw ftError("FT201", { op, a: printType(x), b: printType(indices), da: dim(x), db: dim(indices) });
  }
}
