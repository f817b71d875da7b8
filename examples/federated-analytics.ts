/**
 * Federated analytics on MNIST split into label shards (each client holds about two digits):
 * the server learns the mean pixel intensity over all examples and the label histogram, from
 * per-client summaries alone; no example leaves its client. privateLabelHistogram declares
 * the labels private and releases the histogram only through dpSum (clip 600: a client's 600
 * examples bound its histogram's L2 norm by 600, so nothing is clipped; Gaussian noise of std
 * 600 on each count): the types and the trace prove that nothing else about a client's labels
 * reaches the server.
 *
 *   npm run build && node dist/examples/federated-analytics.js
 */
import { pathToFileURL } from "node:url";
import {
  atClients,
  atServer,
  div,
  dpSum,
  expandDims,
  f32,
  i32,
  map,
  maximum,
  mul,
  oneHot,
  program,
  reduceSum,
  reduceWeightedMean,
  sum,
  useBackend,
} from "fedtensor";
import { batchCohort, federate, loadMnist, partitionShards, Rng } from "fedtensor/lib";

export const labelStatistics = program(
  {
    pixels: atClients(f32(["N", 784])),
    labels: atClients(i32(["N"])),
    mask: atClients(f32(["N"])),
    count: atClients(f32([])),
  },
  ({ pixels, labels, mask, count }) => {
    // Each client summarises its own examples (padding slots have mask 0)...
    const summaries = map(
      (x, y, m) => {
        const real = expandDims(m, -1);
        return {
          brightness: div(sum(mul(x, real)), maximum(mul(sum(m), 784), 1)),
          histogram: sum(mul(oneHot(y, 10), real), 0),
        };
      },
      pixels,
      labels,
      mask,
    );
    // ...and the server combines the summaries.
    return {
      brightness: reduceWeightedMean(summaries.brightness, count),
      histogram: reduceSum(summaries.histogram),
    };
  },
  { name: "label_statistics" },
);

export const privateLabelHistogram = program(
  { labels: atClients(i32(["N"]), { private: true }), mask: atClients(f32(["N"]), { private: true }), key: atServer(i32([2])) },
  ({ labels, mask, key }) =>
    dpSum(
      map((y, m) => sum(mul(oneHot(y, 10), expandDims(m, -1)), 0), labels, mask),
      { clip: 600, noiseMultiplier: 1, key },
    ),
  { name: "private_label_histogram" },
);

async function main(): Promise<void> {
  console.log(`backend: ${await useBackend()}`);
  console.log(`labelStatistics: ${labelStatistics.signature}`);
  const rng = Rng.fromSeed(0);
  const train = loadMnist("train");
  const data = federate(train, loadMnist("test"), partitionShards(train.y, { numShards: 200, shardsPerClient: 2 }, rng));
  const all = Int32Array.from({ length: 100 }, (_, i) => i);
  const batches = batchCohort(data, all, { batchSize: 600, rng });
  const flat = <D extends Float32Array | Int32Array>(t: { shape: number[]; data: D }, width: number[]) => ({ shape: [100, ...width], data: t.data });
  const out = await labelStatistics.run({
    pixels: flat(batches.x, [600, 784]),
    labels: flat(batches.y, [600]),
    mask: flat(batches.mask, [600]),
    count: batches.count,
  });
  console.log(`mean pixel intensity: ${(await out.brightness.data())[0]!.toFixed(4)}`);
  console.log(`label histogram: ${Array.from(await out.histogram.data()).join(", ")}`);
  console.log(`privateLabelHistogram: ${privateLabelHistogram.signature}, aggregated by ${privateLabelHistogram.aggregators.join(", ")}`);
  const noisy = await privateLabelHistogram.run({ labels: flat(batches.y, [600]), mask: flat(batches.mask, [600]), key: [0, 1] });
  console.log(`label histogram with differential privacy: ${Array.from(await noisy.data(), (v) => v.toFixed(0)).join(", ")}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
