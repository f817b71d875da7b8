/**
 * Placement rules at run time, mirroring types/placement.ts: the placement of an operation's
 * result, and the FT1xx errors of placement primitives.
 */
import { mapAdvice } from "../errors/catalogue.js";
import { ftError } from "../errors/error.js";
import { printType } from "./print.js";
import type { Placement, ValueType } from "./types.js";

type Join = Placement | "mix" | "server-in-map" | "clients-in-map";

const joinTable: Record<Placement, Record<Placement, Join>> = {
  server: { server: "server", clients: "mix", "clients-equal": "mix", local: "server", member: "server-in-map" },
  clients: { server: "mix", clients: "clients", "clients-equal": "clients", local: "clients", member: "clients-in-map" },
  "clients-equal": {
    server: "mix",
    clients: "clients",
    "clients-equal": "clients-equal",
    local: "clients-equal",
    member: "clients-in-map",
  },
  local: { server: "server", clients: "clients", "clients-equal": "clients-equal", local: "local", member: "member" },
  member: { server: "server-in-map", clients: "clients-in-map", "clients-equal": "clients-in-map", local: "member", member: "member" },
};

export function joinPlacement(op: string, a: ValueType, b: ValueType): Placement {
  const join = joinTable[a.placement][b.placement];
  switch (join) {
    case "mix":
      throw ftError("FT104", { op, a: printType(a), b: printType(b) });
    case "server-in-map":
      throw ftError("FT102", { got: printType(a.placement === "server" ? a : b), advice: mapAdvice.captured });
    case "clients-in-map":
      // An all-equal CLIENTS value is what broadcast() makes: called inside the function, or
      // captured into it, the fix is the same (broadcast outside, pass it in), as tsc says.
      if ([a.placement, b.placement].every((p) => p === "member" || p === "clients-equal")) throw ftError("FT105", { op: "broadcast" });
      throw ftError("FT106", { got: printType(a.placement === "member" ? b : a), outer: "a per-client function" });
    default:
      return join;
  }
}

/** Joins the placements of any number of operands, left to right, as the types do pairwise. */
export function joinPlacements(op: string, types: readonly ValueType[]): Placement {
  let acc = types[0]!;
  for (const t of types.slice(1)) {
    // Keep the operand that decided the placement so a later failure prints a real operand.
    if (joinPlacement(op, acc, t) !== acc.placement) acc = t;
  }
  return acc.placement;
}

export const isAtClients = (p: Placement): boolean => p === "clients" || p === "clients-equal";
