/**
 * Typing rules of the random-number primitives (see src/ir/threefry.ts for what they compute).
 * A key is i32[2]; keys and counters may carry leading dims (a batch of keys, one per client
 * once map() is batched), broadcast numpy-style.
 */
import { ftError } from "../errors/error.js";
import { requireDType } from "./dtypes.js";
import { NORMAL_WORDS_PER_VALUE } from "./normal.js";
import { joinPlacement } from "./placement.js";
import { printType } from "./print.js";
import * as shapes from "./shapes.js";
import type { DimValue, PrimitiveRule, ValueType } from "./types.js";

/** FT316 unless t is a key (or a batch of keys): int32 with a last dim of 2. */
export function requireKey(op: string, t: ValueType): void {
  if (t.dtype !== "int32" || t.shape.length === 0 || (t.shape.at(-1) !== 2 && t.shape.at(-1) !== null)) {
    throw ftError("FT316", { op, got: printType(t) });
  }
}

export const randomPrimitives: Record<string, PrimitiveRule> = {
  /** Threefry-2x32 blocks: keys i32[...K, 2] and counters i32[...M, 2] to i32[...broadcast(K, M), 2]. */
  threefry2x32: {
    infer: ([key, counter], _attrs, op) => {
      requireKey(op, key!);
      requireKey(op, counter!);
      const lead = shapes.broadcastShapes(key!.shape.slice(0, -1), counter!.shape.slice(0, -1), { op, a: printType(key!), b: printType(counter!) });
      return [{ shape: [...lead, 2], dtype: "int32", placement: joinPlacement(op, key!, counter!) }];
    },
  },
  /** attrs.shape random words from each key: i32[...K, 2] to i32[...K, ...shape]. */
  random_bits: {
    infer: ([key], attrs, op) => {
      requireKey(op, key!);
      return [{ shape: [...key!.shape.slice(0, -1), ...(attrs.shape as DimValue[])], dtype: "int32", placement: key!.placement }];
    },
  },
  /** Uniform f32 values in [attrs.min, attrs.max) of int32 words (src/ir/threefry.ts). */
  uniform_from_bits: {
    infer: ([x], _attrs, op) => {
      requireDType(op, x!.dtype, "int32");
      return [{ ...x!, dtype: "float32" }];
    },
  },
  /** Standard normal f32 values of int32 words, one Threefry block a value: i32[..., 2] to f32[...] (src/ir/normal.ts). */
  normal_from_bits: {
    infer: ([x], _attrs, op) => {
      requireDType(op, x!.dtype, "int32");
      if (x!.shape.at(-1) !== NORMAL_WORDS_PER_VALUE) throw ftError("FT205", { op, want: `i32[..., ${NORMAL_WORDS_PER_VALUE}] (one Threefry block a value)`, got: printType(x!) });
      return [{ ...x!, shape: x!.shape.slice(0, -1), dtype: "float32" }];
    },
  },
  /** Each client's index in the cohort, 0 to C-1: {i32[]}@CLIENTS (see clientIndex() in src/front/random.ts). */
  client_iota: {
    infer: () => [{ shape: [], dtype: "int32", placement: "clients" }],
    // A chunk's clients are not numbered as in the cohort (size buckets reorder them).
    wholeCohort: () => ({ op: "clientIndex()", why: "it numbers the clients of the whole cohort, which a chunk does not know; such rounds run whole" }),
  },
};
