/**
 * Typing rules of the selection primitives behind the robust aggregators (src/front/robust.ts).
 * Each looks at every client's value at once and says, per client, what of its value the
 * aggregate keeps, as a float32 mask at the CLIENTS; the aggregate itself is then an ordinary
 * weighted sum over the clients (federated_sum), so its gradients, batching, lowering and
 * printing are those of reduceSum. The masks are piecewise constant in the clients' values:
 * their derivative is zero, as argsort's is.
 *
 *   federated_trim_mask  x: {f32[S]}@CLIENTS -> {f32[S]}@CLIENTS; per coordinate, 1 for the
 *       clients whose value ranks k..C-k-1 among the C clients (ties broken by client order),
 *       k = floor(attrs.trim C), or k = floor((C - 1) / 2) when attrs.trim is "median".
 *   federated_krum_mask  leaves of one tree, each {f32[...]}@CLIENTS -> {f32[]}@CLIENTS; 1 for
 *       the attrs.select clients of lowest Krum score (Blanchard et al. 2017), the score being
 *       the sum of squared distances, over the whole flattened tree, to the client's
 *       C - attrs.byzantine - 2 nearest other clients.
 */
import { ftError } from "../errors/error.js";
import { requireDType } from "./dtypes.js";
import { isAtClients } from "./placement.js";
import { printType } from "./print.js";
import type { Attrs, PrimitiveRule, ValueType } from "./types.js";

/** The operation a robust selection node comes from (reduceMedian, reduceTrimmedMean, krum), or undefined for other nodes. */
export function robustAggregatorOf(node: { readonly op: string; readonly attrs: { readonly [key: string]: unknown } }): string | undefined {
  if (node.op === "federated_krum_mask") return "krum";
  if (node.op === "federated_trim_mask") return node.attrs.trim === "median" ? "reduceMedian" : "reduceTrimmedMean";
  return undefined;
}

function requireClientsFloat(op: string, x: ValueType): void {
  if (x.placement === "member") throw ftError("FT105", { op });
  if (!isAtClients(x.placement)) throw ftError("FT103", { op, got: printType(x) });
  requireDType(op, x.dtype, "float32");
}

/**
 * The clients trimmed from each end of a coordinate's order: floor(trim C), or for the median
 * floor((C - 1) / 2), leaving one client (C odd) or the two middle ones (C even). FT321 when
 * nothing would be left.
 */
export function trimmedPerSide(op: string, trim: number | "median", clients: number): number {
  const k = trim === "median" ? Math.floor((clients - 1) / 2) : Math.floor(trim * clients);
  if (clients < 1 || 2 * k >= clients) {
    throw ftError("FT321", { op, why: `trimming ${k} of ${clients} clients from each end leaves none; use a smaller trim fraction or more clients` });
  }
  return k;
}

/** Krum's neighbour count C - f - 2; FT321 unless C > 2f + 2 (Blanchard et al.'s condition) and 1 <= select <= C - f. */
export function krumNeighbours(op: string, byzantine: number, select: number, clients: number): number {
  if (clients <= 2 * byzantine + 2) {
    throw ftError("FT321", { op, why: `Krum tolerates f Byzantine clients among C only when C > 2f + 2; got f = ${byzantine} of C = ${clients} clients` });
  }
  if (select > clients - byzantine) {
    throw ftError("FT321", { op, why: `multi-Krum selects at most C - f = ${clients - byzantine} of ${clients} clients, got select ${select}` });
  }
  return clients - byzantine - 2;
}

/** FT321 unless trim is a fraction in [0, 0.5) (reduceTrimmedMean's option, and the rule's attribute). */
export function checkTrimFraction(op: string, trim: unknown): asserts trim is number {
  if (!(typeof trim === "number" && trim >= 0 && trim < 0.5)) throw ftError("FT321", { op, why: `the trim fraction must be in [0, 0.5), got ${String(trim)}` });
}

const count = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value >= 0;

/** FT321 unless Krum's byzantine is a whole number >= 0 and select one >= 1 (krum's options, and the rule's attributes). */
export function checkKrumCounts(op: string, byzantine: unknown, select: unknown): void {
  if (!count(byzantine) || !count(select) || select < 1) {
    throw ftError("FT321", { op, why: `byzantine must be a whole number >= 0 and select one >= 1, got ${String(byzantine)} and ${String(select)}` });
  }
}

const comparesClients = (op: string, attrs: Attrs) => ({
  op: robustAggregatorOf({ op, attrs })!,
  why: "it compares every client with the others, so it needs the whole cohort at once (no fixed-size accumulator); such rounds run whole",
});

export const robustPrimitives: Record<string, PrimitiveRule> = {
  federated_trim_mask: {
    infer: ([x], attrs, op) => {
      requireClientsFloat(op, x!);
      if (attrs.trim !== "median") checkTrimFraction(op, attrs.trim);
      return [{ ...x!, placement: "clients" }];
    },
    wholeCohort: (attrs) => comparesClients("federated_trim_mask", attrs),
  },
  federated_krum_mask: {
    infer: (leaves, attrs, op) => {
      if (leaves.length === 0) throw ftError("FT321", { op, why: "the update tree has no leaves" });
      for (const leaf of leaves) requireClientsFloat(op, leaf);
      checkKrumCounts(op, attrs.byzantine, attrs.select);
      return [{ shape: [], dtype: "float32", placement: "clients" }];
    },
    wholeCohort: (attrs) => comparesClients("federated_krum_mask", attrs),
  },
};
