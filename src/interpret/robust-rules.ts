/**
 * Evaluation rules of the robust selections (src/ir/robust-primitives.ts), written from their
 * definitions over the list of client members: the reference the batched lowering is tested
 * against. Distances here are summed exactly in float64, not through a Gram matrix.
 */
import { krumNeighbours, trimmedPerSide } from "../ir/robust-primitives.js";
import type { ControlRule } from "./rule.js";
import { ascending } from "./sequence-rules.js";
import { scalar, tensor } from "./tensor.js";
import { AtClients, membersOf } from "./values.js";

/** Positions 0..n-1 in ascending order of value (NaN last, ties by position). */
const orderOf = (values: readonly number[]): number[] => values.map((_, i) => i).sort((a, b) => ascending(values[a]!, values[b]!));

const trimMask: ControlRule = ([x], node) => {
  const members = membersOf(x!, node.op);
  const trim = node.attrs.trim as number | "median";
  const k = trimmedPerSide(trim === "median" ? "reduceMedian" : "reduceTrimmedMean", trim, members.length);
  const masks = members.map((m) => tensor(m.shape, "float32"));
  for (let p = 0; p < members[0]!.data.length; p++) {
    orderOf(members.map((m) => m.data[p]!)).forEach((client, rank) => {
      masks[client]!.data[p] = rank >= k && rank < members.length - k ? 1 : 0;
    });
  }
  return [new AtClients(masks)];
};

const krumMask: ControlRule = (leaves, node) => {
  const { byzantine, select } = node.attrs as { byzantine: number; select: number };
  const perLeaf = leaves.map((leaf) => membersOf(leaf, node.op));
  const clients = perLeaf[0]!.length;
  const neighbours = krumNeighbours("krum", byzantine, select, clients);
  const flat = Array.from({ length: clients }, (_, i) => perLeaf.flatMap((members) => Array.from(members[i]!.data)));
  const distance = (a: number[], b: number[]) => a.reduce((sum, v, j) => sum + (v - b[j]!) ** 2, 0);
  const scores = flat.map((own, i) => {
    const others = flat.flatMap((other, j) => (j === i ? [] : [distance(own, other)])).sort(ascending);
    return others.slice(0, neighbours).reduce((a, b) => a + b, 0);
  });
  const chosen = new Set(orderOf(scores).slice(0, select));
  return [new AtClients(flat.map((_, i) => scalar(chosen.has(i) ? 1 : 0, "float32")))];
};

export const robustControlRules: Record<string, ControlRule> = {
  federated_trim_mask: trimMask,
  federated_krum_mask: krumMask,
};
