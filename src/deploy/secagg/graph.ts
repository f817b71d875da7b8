/**
 * SecAgg+'s neighbour graph (Bell et al. 2020): a client exchanges masks and shares only with
 * its k = num_shares - 1 neighbours, k about log n, instead of with all n - 1 others. As in
 * Bell et al.'s random Harary graph, the clients are placed on a ring by a secret random
 * permutation (a Fisher-Yates shuffle from the CSPRNG, drawn by the server each round and never
 * sent whole: a client learns only its own neighbours) and each is joined to the k / 2 nearest
 * on each side. With k >= n - 1 this is the complete graph of the original SecAgg.
 */
import { type RandomBytes, uniformInt } from "./random.js";

export type NeighbourGraph = ReadonlyMap<string, ReadonlySet<string>>;

/** A uniformly random permutation of the ids (Fisher-Yates with unbiased draws). */
export function secretPermutation(ids: readonly string[], randomBytes: RandomBytes): string[] {
  const out = ids.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = uniformInt(randomBytes, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The Harary graph H(k, n) over the ring order `ring`: k / 2 neighbours each side (k even or k >= n - 1). */
export function ringGraph(ring: readonly string[], degree: number): NeighbourGraph {
  const n = ring.length;
  const graph = new Map<string, Set<string>>(ring.map((id) => [id, new Set<string>()]));
  if (degree >= n - 1) {
    for (const a of ring) for (const b of ring) if (a !== b) graph.get(a)!.add(b);
    return graph;
  }
  const half = degree / 2;
  for (let i = 0; i < n; i++) {
    for (let d = 1; d <= half; d++) {
      const a = ring[i]!;
      const b = ring[(i + d) % n]!;
      graph.get(a)!.add(b);
      graph.get(b)!.add(a);
    }
  }
  return graph;
}

/** The neighbour graph of a round: a Harary graph of the given degree over a secret permutation. */
export function neighbourGraph(ids: readonly string[], degree: number, randomBytes: RandomBytes): NeighbourGraph {
  return ringGraph(secretPermutation(ids, randomBytes), degree);
}
