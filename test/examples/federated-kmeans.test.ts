/**
 * examples/federated-kmeans.ts: a federated Lloyd round is the Lloyd step on the pooled points
 * (computed here in plain JS, float64), so the cost never rises from round to round, and on
 * well-separated synthetic clusters the centroids land on the true centres.
 */
import { expect, test } from "vitest";
import { assignToNearest, federatedKMeans, initialCentroids, K, lloydRound, syntheticClients, TRUE_CENTRES, type Points } from "../../examples/federated-kmeans.js";
import { atClients, atServer, f32, program, reduceSum } from "../../src/index.js";
import { clientsFrom, padClients } from "../../src/lib/data/index.js";
import { Rng } from "../../src/lib/random.js";

const squared = (a: readonly number[], b: readonly number[]) => a.reduce((s, v, i) => s + (v - b[i]!) ** 2, 0);

/** The Lloyd step on all points in one place: nearest centroid (first on ties), then means. */
function centralLloydStep(points: Points, centroids: Points): { centroids: Points; cost: number } {
  const sums = centroids.map((): [number, number] => [0, 0]);
  const counts = centroids.map(() => 0);
  let cost = 0;
  for (const p of points) {
    const distances = centroids.map((c) => squared(p, c));
    const nearest = distances.indexOf(Math.min(...distances));
    const sum = sums[nearest]!;
    sum[0] += p[0];
    sum[1] += p[1];
    counts[nearest]! += 1;
    cost += distances[nearest]!;
  }
  return { centroids: centroids.map((c, k) => (counts[k]! > 0 ? [sums[k]![0] / counts[k]!, sums[k]![1] / counts[k]!] : [...c]) as [number, number]), cost };
}

const rng = Rng.fromSeed(11);
const clients = syntheticClients(rng.fork("data"));
const data = clientsFrom(clients.map((points) => ({ x: points })));
const start = initialCentroids(clients, rng.fork("init"));

test("the clients differ in size and the program has the federated signature", () => {
  expect(new Set(clients.map((c) => c.length)).size).toBeGreaterThan(5);
  expect(lloydRound.signature).toBe(
    "(<centroids=f32[3,2]@SERVER,points={f32[N,2]}@CLIENTS,mask={f32[N]}@CLIENTS> -> <centroids=f32[3,2],cost=f32[]>@SERVER)",
  );
});

test("one federated round equals the central Lloyd step on the pooled points", async () => {
  const pooled = clients.flat();
  // From the random start and from a start where one centroid is far from every point (its cluster stays empty).
  for (const centroids of [start, [[0, 0], [1, 1], [50, 50]] as Points]) {
    const { x, mask } = padClients(data);
    const out = await lloydRound.run({ centroids, points: x, mask });
    const federated = out.centroids.arraySync() as Points;
    const cost = (await out.cost.data())[0]!;
    out.centroids.dispose();
    out.cost.dispose();
    const central = centralLloydStep(pooled, centroids);
    for (let k = 0; k < K; k++) for (let d = 0; d < 2; d++) expect(Math.abs(federated[k]![d]! - central.centroids[k]![d]!)).toBeLessThan(1e-4);
    expect(Math.abs(cost - central.cost) / central.cost).toBeLessThan(1e-4);
  }
});

test("the cost never rises, and the centroids recover the true centres", async () => {
  const history = await federatedKMeans(data, start, 8);
  // Lloyd's property, up to float32 rounding of the summed cost.
  for (let r = 1; r < history.length; r++) expect(history[r]!.cost).toBeLessThanOrEqual(history[r - 1]!.cost * (1 + 1e-5));
  expect(history.at(-1)!.cost).toBeLessThan(history[0]!.cost);
  // Each true centre has a centroid within 0.3 (the points' std is 0.8, about 30 points per cluster and more).
  const final = history.at(-1)!.centroids;
  for (const centre of TRUE_CENTRES) expect(Math.min(...final.map((c) => Math.sqrt(squared(c, centre))))).toBeLessThan(0.3);
  // And the final centroids are a fixed point: one more step changes nothing.
  const again = centralLloydStep(clients.flat(), final);
  for (let k = 0; k < K; k++) for (let d = 0; d < 2; d++) expect(Math.abs(again.centroids[k]![d]! - final[k]![d]!)).toBeLessThan(1e-4);
});

test("the helper called with the SERVER centroids fails while tracing too, with tsc's message", () => {
  // test/fixtures/type-errors/ft104-kmeans-helper.ts holds the tsc side; here the check is forced past tsc.
  const inputs = { centroids: atServer(f32([3, 2])), points: atClients(f32(["N", 2])), mask: atClients(f32(["N"])) };
  expect(() =>
    program(inputs, ({ centroids, points, mask }) => reduceSum(assignToNearest(points, mask, centroids as never).sums)),
  ).toThrow("FT104: assignToNearest() mixes {f32[N,2]}@CLIENTS with f32[3,2]@SERVER");
});
