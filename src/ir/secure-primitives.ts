/**
 * Typing rules of the secure-sum primitives (what they compute: src/ir/secure-sum.ts).
 * - secure_sum: {T[S]}@CLIENTS and a key i32[2] (SERVER or local) to T[S]@SERVER, T float32
 *   or int32; the placement form that programs, gradients and the interpreter see.
 * - secure_sum_clients: its client-batched form, on a tensor whose axis 0 is the clients
 *   ([C, ...S] to [...S]), which the backends lower.
 */
import { ftError } from "../errors/error.js";
import { isAtClients } from "./placement.js";
import { printType } from "./print.js";
import { requireKey } from "./random-primitives.js";
import type { PrimitiveRule, ValueType } from "./types.js";

function requireSummable(op: string, x: ValueType): void {
  if (x.dtype !== "float32" && x.dtype !== "int32") throw ftError("FT205", { op, want: "f32 or i32", got: printType(x) });
}

function requireSharedKey(op: string, key: ValueType): void {
  requireKey(op, key);
  if (key.placement !== "server" && key.placement !== "local") throw ftError("FT312", { what: "key", why: `the pair keys derive from one key that the server holds, got ${printType(key)}` });
}

export const securePrimitives: Record<string, PrimitiveRule> = {
  secure_sum: {
    infer: ([x, key], _attrs, op) => {
      if (x!.placement === "member") throw ftError("FT105", { op });
      if (!isAtClients(x!.placement)) throw ftError("FT103", { op, got: printType(x!) });
      requireSummable(op, x!);
      requireSharedKey(op, key!);
      return [{ shape: x!.shape, dtype: x!.dtype, placement: "server" }];
    },
  },
  secure_sum_clients: {
    infer: ([x, key], _attrs, op) => {
      requireSummable(op, x!);
      requireKey(op, key!);
      return [{ shape: x!.shape.slice(1), dtype: x!.dtype, placement: x!.placement }];
    },
  },
};
