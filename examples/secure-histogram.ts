/**
 * The label histogram of MNIST split into label shards (each client holds about two digits),
 * learned by the server through secure aggregation: each client's counts reach it only
 * masked by pairwise masks that cancel in the sum (docs/language.md, "Secure aggregation").
 * The result is the exact histogram, which main() checks against the labels themselves.
 *
 *   npm run build && node dist/examples/secure-histogram.js
 */
import { pathToFileURL } from "node:url";
import { atClients, atServer, cast, expandDims, f32, i32, map, mul, oneHot, program, secureSum, sum, useBackend } from "fedtensor";
import { batchCohort, federate, loadMnist, partitionShards, Rng } from "fedtensor/lib";

const examplesPerClient = 600;

export const secureHistogram = program(
  { labels: atClients(i32(["N"])), mask: atClients(f32(["N"])), key: atServer(i32([2])) },
  ({ labels, mask, key }) => {
    // Each client counts its own labels (padding slots have mask 0)...
    const counts = map((y, m) => cast(sum(mul(oneHot(y, 10), expandDims(m, -1)), 0), "int32"), labels, mask);
    // ...and the server learns only their sum: every count lies in [0, examplesPerClient].
    return secureSum(counts, { bits: 20, key, range: [0, examplesPerClient] });
  },
  { name: "secure_histogram" },
);

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`secureHistogram: ${secureHistogram.signature}`);
  const rng = Rng.fromSeed(0);
  const train = loadMnist("train");
  const data = federate(train, loadMnist("test"), partitionShards(train.y, { numShards: 200, shardsPerClient: 2 }, rng));
  const all = Int32Array.from({ length: 100 }, (_, i) => i);
  const batches = batchCohort(data, all, { batchSize: examplesPerClient, rng });
  const flat = <D extends Float32Array | Int32Array>(t: { data: D }) => ({ shape: [100, examplesPerClient], data: t.data });
  const out = await secureHistogram.run({ labels: flat(batches.y), mask: flat(batches.mask), key: [2026, 12] });
  const histogram = Array.from(await out.data());
  const truth = new Array<number>(10).fill(0);
  train.y.forEach((label) => truth[label]!++);
  console.log(`secure label histogram: ${histogram.join(", ")}`);
  console.log(`the labels' own count:  ${truth.join(", ")} (${histogram.every((v, i) => v === truth[i]) ? "equal" : "DIFFERENT"})`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
