/**
 * The aggregations of a program, each as a TFF intrinsic with its type:
 * `federated_median: ({f32[784,10]}@CLIENTS -> f32[784,10]@SERVER)`. The robust aggregators
 * are a selection followed by sums over the clients (src/front/robust.ts); they print as the
 * one intrinsic they are, and the sums they are made of are not listed again. Also the
 * user-level aggregators a graph uses (aggregatorsOf), from the same table.
 */
import { printType } from "./print.js";
import { robustAggregatorOf } from "./robust-primitives.js";
import type { Graph, Node, ProgramIR, ValueType } from "./types.js";

/**
 * Each federated reduction primitive: the user-level aggregator it stands for (what a
 * program's `aggregators` lists) and the TFF intrinsic it prints as.
 */
const federatedReductions: Readonly<Record<string, { readonly aggregator: string; readonly intrinsic: string }>> = {
  federated_sum: { aggregator: "reduceSum", intrinsic: "federated_sum" },
  federated_mean: { aggregator: "reduceMean", intrinsic: "federated_mean" },
  federated_max: { aggregator: "reduceMax", intrinsic: "federated_max" },
  federated_min: { aggregator: "reduceMin", intrinsic: "federated_min" },
  aggregate: { aggregator: "aggregate", intrinsic: "federated_aggregate" },
  secure_sum: { aggregator: "secureSum", intrinsic: "federated_secure_sum" },
};

/** dpSum's sum is a federated_sum marked by its aggregator (src/front/privacy.ts). */
const intrinsicOf = (node: Node): string => (node.attrs.aggregator === "dpSum" ? "federated_dp_sum" : federatedReductions[node.op]!.intrinsic);

/**
 * The aggregators a graph uses, each once, in order of first use: what its signature shows
 * beside the types (reduceWeightedMean is two reduceSums, and shows as such); dpSum's sums
 * say their own name (the `aggregator` attribute).
 */
export function aggregatorsOf(graph: Graph): string[] {
  const found = new Set<string>();
  const walk = (g: Graph): void => {
    for (const node of g.nodes) {
      const name = typeof node.attrs.aggregator === "string" ? node.attrs.aggregator : federatedReductions[node.op]?.aggregator;
      if (name !== undefined) found.add(name);
      node.bodies?.forEach(walk);
    }
  };
  walk(graph);
  return [...found];
}

/** TFF-style name of a robust selection node, with its parameters. */
function robustName(node: Node): string {
  if (node.op === "federated_krum_mask") return `federated_krum<f=${String(node.attrs.byzantine)},m=${String(node.attrs.select)}>`;
  return node.attrs.trim === "median" ? "federated_median" : `federated_trimmed_mean<trim=${String(node.attrs.trim)}>`;
}

const isRobust = (node: Node) => robustAggregatorOf(node) !== undefined;

export function printAggregations(ir: ProgramIR): string[] {
  const lines: string[] = [];
  const typeOf = (id: number): ValueType => ir.values[id]!;
  const tuple = (types: readonly string[]) => (types.length === 1 ? types[0]! : `<${types.join(",")}>`);
  const walk = (graph: Graph): void => {
    // Values a robust selection made or weighted: the sums over them belong to that aggregator.
    const selected = new Set<number>();
    for (const node of graph.nodes) {
      if (isRobust(node)) {
        node.outputs.forEach((id) => selected.add(id));
        const clients = node.inputs.map((id) => printType(typeOf(id)));
        const server = node.inputs.map((id) => printType({ ...typeOf(id), placement: "server" }));
        lines.push(`${robustName(node)}: (${tuple(clients)} -> ${tuple(server)})`);
      } else if (node.op === "mul" && node.inputs.some((id) => selected.has(id))) {
        node.outputs.forEach((id) => selected.add(id));
      } else if (node.op in federatedReductions && !node.inputs.some((id) => selected.has(id))) {
        const members = node.op === "aggregate" ? node.inputs.slice(0, node.attrs.members as number) : node.inputs;
        lines.push(`${intrinsicOf(node)}: (${tuple(members.map((id) => printType(typeOf(id))))} -> ${tuple(node.outputs.map((id) => printType(typeOf(id))))})`);
      }
      for (const body of node.bodies ?? []) walk(body);
    }
  };
  walk(ir.graph);
  return lines;
}
