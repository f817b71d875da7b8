/**
 * A program's releases, what `program.privacy` and `fedtensor ir --signature` list
 * (docs/language.md "Privacy"): each call of a releasing aggregator with its mechanism and,
 * for dpSum, its clip, its noise multiplier z and its cost per call in zero-concentrated DP,
 * rho = 1 / (2 z^2) (the Gaussian mechanism of L2 sensitivity C and noise z C; Bun and Steinke
 * 2016, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower Bounds",
 * Proposition 1.6). rho adds up over calls (their Lemma 2.3), so a reviewer reads the
 * program's cost per run from these lines: the calls of a release inside loops are counted.
 * distributedDpSum's line gives its zCDP cost with the effective noise multiplier after rounding and
 * the additive tau d of a sum of discrete Gaussians. The sums record what they release as
 * attributes (src/front/privacy.ts, src/front/secure.ts, src/front/distributed-dp.ts).
 */
import type { Graph, Node, ProgramIR } from "./types.js";
import { leafPaths } from "./tree-paths.js";

/**
 * The note after the signature of a program with a secure sum: in one process its masks are
 * a simulation; and a secure sum of private data releases their exact sum, without DP.
 */
export function secureSumNote(ir: ProgramIR): string | undefined {
  let found: "none" | "public" | "private" = "none";
  const walk = (graph: Graph): void => {
    for (const node of graph.nodes) {
      if (node.op === "secure_sum") found = found === "private" || ir.values[node.inputs[0]!]!.private === true ? "private" : "public";
      node.bodies?.forEach(walk);
    }
  };
  walk(ir.graph);
  if (found === "none") return undefined;
  return found === "private" ? `[secureSum of private data: exact sum, no DP; ${simulated}]` : `[${simulated}]`;
}
const simulated = "secureSum simulated in one process: the server derives every pair key";

/** The zCDP cost rho = 1 / (2 z^2) of one Gaussian release with noise multiplier z. */
export const zcdpRho = (z: number): number => 1 / (2 * z * z);

const significant = (x: number): string => String(Number(x.toPrecision(4)));

/** One line per release, in the order the program calls them. */
export function printReleases(ir: ProgramIR): string[] {
  const names = leafPaths(ir.inputTree);
  const option = (node: Node, name: "clip" | "noiseMultiplier"): string => {
    const value = node.attrs[name];
    if (typeof value === "number") return significant(value);
    const input = node.attrs[`${name}Input`];
    return typeof input === "number" ? `input ${names[input]} (checked > 0 when run)` : "computed in the program (not checked before it runs)";
  };
  const seen = new Map<number, string>();
  const walk = (graph: Graph, calls: number | null): void => {
    for (const node of graph.nodes) {
      const release = node.attrs.release;
      if (typeof release === "number" && !seen.has(release)) {
        const times = calls === null ? "called once per step of a loop of unknown length" : calls === 1 ? "called once" : `called ${calls} times (loops)`;
        if (node.attrs.aggregator === "dpSum") {
          const z = node.attrs.noiseMultiplier;
          const cost = typeof z === "number" ? `rho = ${significant(zcdpRho(z))} zCDP per call` : "rho = 1/(2 z^2) zCDP per call";
          seen.set(release, `dpSum #${release}: Gaussian mechanism, clip ${option(node, "clip")}, noise multiplier ${option(node, "noiseMultiplier")}, ${cost}, ${times}`);
        } else if (node.attrs.aggregator === "distributedDpSum") {
          const a = node.attrs as Record<string, number>;
          const z = a.effectiveNoiseMultiplier!;
          seen.set(
            release,
            `distributedDpSum #${release}: distributed discrete Gaussian (client noise, ${a.bits}-bit modular sum), clip ${significant(a.clip!)}, noise multiplier ${significant(a.noiseMultiplier!)} at >= ${a.minClients} clients (${significant(z)} after rounding), at most ${a.maxClients} clients, rho = ${significant(zcdpRho(z))} zCDP per call plus tau d = ${significant(a.tauD!)} (Kairouz et al. 2021, Prop. 14), ${times}`,
          );
        } else if (node.op === "secure_sum") {
          seen.set(release, `secureSum #${release}: exact sum, no DP (masks simulated in one process), at least ${String(node.attrs.minClients ?? 2)} clients, ${times}`);
        }
      }
      const length = node.op === "scan" ? node.attrs.length : 1;
      const inner = calls === null || typeof length !== "number" ? null : calls * length;
      for (const body of node.bodies ?? []) walk(body, inner);
    }
  };
  walk(ir.graph, 1);
  return [...seen.entries()].sort(([a], [b]) => a - b).map(([, line]) => line);
}
