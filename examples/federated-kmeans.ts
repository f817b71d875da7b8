/**
 * Federated k-means: Lloyd's algorithm where no point leaves its client. Each round the SERVER
 * broadcasts the centroids, each client assigns its points to the nearest centroid and sends
 * only per-cluster sums and counts (a one-hot matmul), and the SERVER adds them over clients and
 * divides: exactly the Lloyd step on the pooled points, so the within-cluster cost never rises.
 * A cluster that no point chose keeps its centroid.
 *
 * The data is synthetic: K clusters in 2-D, split over CLIENTS clients of different sizes, each
 * client drawing most of its points from one "home" cluster (non-IID), loaded with clientsFrom.
 * The per-client step is a helper (docs/language.md "Writing helpers"): called with the SERVER
 * centroids where the broadcast ones belong, it fails tsc with FT104
 * (test/fixtures/type-errors/ft104-kmeans-helper.ts).
 *
 *   npm run build && node dist/examples/federated-kmeans.js
 */
import { pathToFileURL } from "node:url";
import {
  atClients,
  atServer,
  broadcast,
  div,
  expandDims,
  f32,
  greater,
  helper,
  map,
  matmul,
  maximum,
  min,
  mul,
  oneHot,
  program,
  reduceSum,
  squaredDistance,
  sum,
  transpose,
  useBackend,
  where,
  argmin,
  type Float,
} from "fedtensor";
import { type ClientDataset, clientsFrom, padClients, Rng } from "fedtensor/lib";

export const K = 3;
export const CLIENTS = 20;
/** The centres the synthetic points are drawn around (std SPREAD in each coordinate). */
export const TRUE_CENTRES: readonly (readonly [number, number])[] = [
  [-4, -3],
  [4, -2],
  [0, 5],
];
export const SPREAD = 0.8;

/**
 * One client's part of a Lloyd step: each real point (mask 1) goes to its nearest centroid;
 * the result is the per-cluster sum of points [K, 2], the per-cluster count [K] and the
 * squared distance of the points to their centroids (the client's share of the cost).
 */
export const assignToNearest = helper("assignToNearest", (points: Float<["N", 2]>, mask: Float<["N"]>, centroids: Float<[3, 2]>) => {
  const distances = squaredDistance(expandDims(points, 1), centroids, -1); // [N, K]
  const membership = mul(oneHot(argmin(distances, -1), 3), expandDims(mask, -1)); // [N, K], padding rows 0
  return {
    sums: matmul(transpose(membership), points),
    counts: sum(membership, 0),
    cost: sum(mul(min(distances, -1), mask)),
  };
});

/** One Lloyd round: the new centroids and the within-cluster cost of the centroids given. */
export const lloydRound = program(
  {
    centroids: atServer(f32([3, 2])),
    points: atClients(f32(["N", 2])),
    mask: atClients(f32(["N"])),
  },
  ({ centroids, points, mask }) => {
    const parts = map((p, m, c) => assignToNearest(p, m, c), points, mask, broadcast(centroids));
    const counts = expandDims(reduceSum(parts.counts), -1); // [K, 1]
    return {
      centroids: where(greater(counts, 0), div(reduceSum(parts.sums), maximum(counts, 1)), centroids),
      cost: reduceSum(parts.cost),
    };
  },
  { name: "lloyd_round" },
);

export type Points = [number, number][];

/** CLIENTS clients of 5 to 60 points; 80% of a client's points come from its home cluster. */
export function syntheticClients(rng: Rng): Points[] {
  return Array.from({ length: CLIENTS }, (_, client) => {
    const home = client % K;
    return Array.from({ length: rng.int(5, 61) }, () => {
      const cluster = rng.float() < 0.8 ? home : rng.int(0, K);
      const [cx, cy] = TRUE_CENTRES[cluster]!;
      return [rng.normal(cx, SPREAD), rng.normal(cy, SPREAD)] as [number, number];
    });
  });
}

/** Initial centroids: one random point from each of K distinct random clients (no pooling). */
export function initialCentroids(clients: readonly Points[], rng: Rng): Points {
  return Array.from(rng.sample(clients.length, K), (c) => {
    const points = clients[c]!;
    return [...points[rng.int(0, points.length)]!] as [number, number];
  });
}

export interface Round {
  readonly centroids: Points;
  /** The within-cluster cost of the centroids this round started from. */
  readonly cost: number;
}

/** `rounds` Lloyd rounds from `start`, one lloydRound.run per round (a host loop). */
export async function federatedKMeans(data: ClientDataset<"x">, start: Points, rounds: number): Promise<Round[]> {
  const { x, mask } = padClients(data);
  const history: Round[] = [];
  let centroids = start;
  for (let r = 0; r < rounds; r++) {
    const out = await lloydRound.run({ centroids, points: x, mask });
    centroids = out.centroids.arraySync() as Points;
    history.push({ centroids, cost: (await out.cost.data())[0]! });
    out.centroids.dispose();
    out.cost.dispose();
  }
  return history;
}

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`lloydRound: ${lloydRound.signature}`);
  const rng = Rng.fromSeed(7);
  const clients = syntheticClients(rng.fork("data"));
  const data = clientsFrom(clients.map((points) => ({ x: points })));
  console.log(`${CLIENTS} clients, ${clients.map((c) => c.length).join(" ")} points`);
  const start = initialCentroids(clients, rng.fork("init"));
  const show = (points: Points) => points.map(([a, b]) => `(${a.toFixed(3)}, ${b.toFixed(3)})`).join(" ");
  console.log(`start: ${show(start)}`);
  for (const [r, round] of (await federatedKMeans(data, start, 6)).entries()) {
    console.log(`round ${r + 1}: cost of its start ${round.cost.toFixed(3)}, new centroids ${show(round.centroids)}`);
  }
  console.log(`true centres: ${show(TRUE_CENTRES.map(([a, b]) => [a, b]))}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
