/**
 * bench/gemm: matrix-product throughput of a FedTensor program, sum(matmul(a, b)) with a and b
 * square float32 matrices at the server, on each backend named, in one process. The sum makes
 * the output one number, so a run's time is the product's (2 N^3 flops against N^2 for the
 * sum) and not the read-back of N^2 results. Inputs are made on each backend once; rounds
 * alternate between backends and the median is reported, with its ratio to the first backend
 * named and, given --peak-tflops (the chip's float32 peak), the fraction of it reached.
 *
 * usage: node dist/bench/gemm.js [--backends onnx,webgpu] [--sizes 1024,2048,4096] [--rounds 5]
 *          [--peak-tflops 67] [--json file]
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { useBackend, type BackendName } from "../src/runtime/backend.js";
import { median } from "./stats.js";
import { gemmProgram, squareMatrix } from "./gemm-peak.js";

const { values } = parseArgs({
  options: {
    backends: { type: "string", default: "onnx,webgpu" },
    sizes: { type: "string", default: "1024,2048,4096" },
    rounds: { type: "string", default: "5" },
    "peak-tflops": { type: "string" },
    json: { type: "string" },
  },
});
const backends = values.backends.split(",") as BackendName[];
const rounds = Number(values.rounds);
const peak = values["peak-tflops"] === undefined ? undefined : Number(values["peak-tflops"]) * 1e12;

const rows: Record<string, unknown>[] = [];
console.log(`gemm: sum(matmul(a, b)), float32, median of ${rounds} rounds after one warm-up${peak === undefined ? "" : `, peak ${values["peak-tflops"]} TFLOP/s`}`);
console.log(`  ${"backend".padEnd(8)} ${"N".padStart(6)}   ms/product   GFLOP/s   vs ${backends[0]}${peak === undefined ? "" : "   of peak"}`);
for (const n of values.sizes.split(",").map(Number)) {
  const gemm = gemmProgram(n);
  const [aData, bData] = [squareMatrix(n, 0), squareMatrix(n, 1)];
  const inputs = new Map<BackendName, { a: tf.Tensor; b: tf.Tensor }>();
  const times = new Map<BackendName, number[]>(backends.map((b) => [b, []]));
  const once = async (backend: BackendName) => {
    await useBackend(backend);
    if (!inputs.has(backend)) inputs.set(backend, { a: tf.tensor(aData, [n, n]), b: tf.tensor(bData, [n, n]) });
    const start = performance.now();
    const out = await gemm.run(inputs.get(backend)!, { backend });
    await out.data();
    out.dispose();
    return performance.now() - start;
  };
  const failed = new Map<BackendName, string>();
  for (let r = 0; r <= rounds; r++) {
    for (const backend of backends) {
      if (failed.has(backend)) continue;
      try {
        const ms = await once(backend);
        if (r > 0) times.get(backend)!.push(ms);
      } catch (error) {
        failed.set(backend, (error as Error).message.split("\n")[0]!);
      }
    }
  }
  const baseline = times.get(backends[0]!)!.length > 0 ? median(times.get(backends[0]!)!) : undefined;
  for (const backend of backends) {
    if (failed.has(backend)) {
      console.log(`  ${backend.padEnd(8)} ${String(n).padStart(6)}   failed: ${failed.get(backend)!.slice(0, 160)}`);
      rows.push({ backend, n, failed: failed.get(backend) });
      continue;
    }
    const ms = median(times.get(backend)!);
    const flops = (2 * n ** 3) / (ms / 1000);
    const speedup = baseline === undefined ? "-" : (baseline / ms).toFixed(2);
    const ofPeak = peak === undefined ? "" : `   ${((100 * flops) / peak).toFixed(1)}%`;
    console.log(`  ${backend.padEnd(8)} ${String(n).padStart(6)}   ${ms.toFixed(2).padStart(10)}   ${(flops / 1e9).toFixed(1).padStart(7)}   ${speedup.padStart(5)}x${ofPeak}`);
    rows.push({ backend, n, msMedian: ms, gflops: flops / 1e9, speedupVsFirst: baseline === undefined ? null : baseline / ms, ofPeak: peak === undefined ? null : flops / peak });
  }
  for (const [backend, { a, b }] of inputs) {
    await useBackend(backend);
    tf.dispose([a, b]);
  }
  await gemm.dispose();
}
if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(rows, null, 2));
