/**
 * SecAgg+'s neighbour graph (Bell et al. 2020): a client exchanges masks and shares only with
 * its k = num_shares - 1 neighbours, k about log n, instead of with all n - 1 others. As in
 * Bell et al.'s random Harary graph, the clients are placed on a ring by a random permutation
 * and each is joined to the k / 2 nearest on each side. With k >= n - 1 this is the complete
 * graph of the original SecAgg.
 *
 * The permutation comes from public randomness, not from the server's choice: its seed is
 * SHA-256 over the session, the round and the signed key list of the clients that advertised
 * keys (each one's id and its Ed25519 signature over its fresh keys). Every client receives that
 * list, checks every signature, and recomputes the seed and its own neighbours; a server that
 * picked a victim's neighbours (its own Sybils, say) would have to forge signatures or make the
 * honest clients' fresh keys hash as it likes. What it can still do is leave advertised clients
 * out of the list (docs/deployment.md, "Threat model").
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { fromBase64 } from "./codec.js";
import { PROTOCOL } from "./keys.js";
import { type RandomBytes, streamBytes, uniformInt } from "./random.js";

export type NeighbourGraph = ReadonlyMap<string, ReadonlySet<string>>;

/** A uniformly random permutation of the ids (Fisher-Yates with unbiased draws). */
export function permutation(ids: readonly string[], randomBytes: RandomBytes): string[] {
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

/** One entry of the signed key list: a client's id and its signature over its round keys (base64). */
export interface RosterEntry {
  readonly id: string;
  readonly signature: string;
}

const encoder = new TextEncoder();

/**
 * The graph's seed: SHA-256 over the protocol, the session, the round and, in id order, each
 * advertised client's id (length-prefixed) and signature bytes. Hex, as the share-keys request
 * carries it.
 */
export function graphSeed(session: string, round: number, roster: readonly RosterEntry[]): string {
  const hash = sha256.create().update(encoder.encode(`${PROTOCOL}|graph|${session}|${round}|`));
  for (const entry of [...roster].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    hash.update(encoder.encode(`${entry.id.length}:${entry.id}|`));
    hash.update(fromBase64(entry.signature)!); // base64 of 64 bytes: the schema checked it
  }
  return Array.from(hash.digest(), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The round's graph over the ids (any order: they are sorted first), from the seed: every client computes the same. */
export function publicGraph(ids: readonly string[], degree: number, seed: string): NeighbourGraph {
  const sorted = [...ids].sort();
  const key = Uint8Array.from(seed.match(/../g)!, (h) => parseInt(h, 16));
  return ringGraph(permutation(sorted, streamBytes(key)), degree);
}
