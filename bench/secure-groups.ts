/**
 * bench/secure-groups: issue 21's 160-client secure sum of f32[10000] (34 s with all pairs in
 * docs/benchmarks.md, "Secure aggregation"), on onnx, three ways:
 * 1. whole, all pairs: one secure sum over the cohort, every client paired with every other;
 * 2. streamed as one group of 160: the round's MapReduce form, SecAgg+ masks (2 ceil(log2 n)
 *    neighbours, the default of a grouped sum);
 * 3. streamed in groups of --group (default 40): one SecAgg+ group a chunk.
 * Median seconds of --rounds runs each (after one warm-up), and the ratio to the first.
 *
 * usage: node dist/bench/secure-groups.js [--rounds 3] [--group 40]
 */
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { atClients, atServer, f32, i32, program, secureSum } from "../src/index.js";
import { useBackend } from "../src/runtime/backend.js";
import { runStreamed } from "../src/runtime/mapreduce.js";
import { median } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" }, group: { type: "string", default: "40" } } });
const [clients, size, group] = [160, 10000, Number(values.group)];
await useBackend("onnx");

const summed = program({ key: atServer(i32([2])), x: atClients(f32([size])) }, ({ key, x }) => secureSum(x, { bits: 30, key, range: [-1, 1], scale: 1000 }));
const data = Float32Array.from({ length: clients * size }, (_, i) => Math.sin(i) * 0.5);
const chunksOf = (n: number) => Array.from({ length: clients / n }, (_, k) => ({ x: { shape: [n, size], data: data.subarray(k * n * size, (k + 1) * n * size) } }));

const variants: Record<string, () => Promise<unknown>> = {
  "whole, all pairs": () => summed.run({ key: [1, 2], x: { shape: [clients, size], data } } as never, { backend: "onnx" } as never),
  "streamed, one SecAgg+ group of 160": () => runStreamed(summed.ir, { inputs: { key: [1, 2] }, cohortSize: clients, chunks: chunksOf(clients) }, { backend: "onnx" }),
  [`streamed, SecAgg+ groups of ${group}`]: () => runStreamed(summed.ir, { inputs: { key: [1, 2] }, cohortSize: clients, chunks: chunksOf(group) }, { backend: "onnx" }),
};

console.log(`secure-groups: secure sum of f32[${size}] over ${clients} clients, onnx, median of ${values.rounds} runs`);
let first: number | undefined;
for (const [name, run] of Object.entries(variants)) {
  const seconds: number[] = [];
  for (let r = 0; r <= Number(values.rounds); r++) {
    const start = performance.now();
    const out = (await run()) as tf.Tensor;
    await out.data();
    out.dispose();
    if (r > 0) seconds.push((performance.now() - start) / 1000);
  }
  const m = median(seconds);
  first ??= m;
  console.log(`  ${name.padEnd(36)} ${m.toFixed(3).padStart(8)} s   x${(m / first).toFixed(3)}`);
}
