/**
 * The GEMM peak a round bench compares itself with: the float32 product rate of ONNX Runtime
 * on this machine, measured in the same process just before the figure is printed (the
 * machines here are shared and noisy: a peak from another run would not be comparable). The
 * rate is that of sum(matmul(a, b)) on square matrices, bench/gemm.ts's program; the peak is
 * the best median over the sizes tried (mid-sized squares: the largest products fall out of
 * cache on these machines, the smallest are overhead-bound).
 */
import * as tf from "@tensorflow/tfjs";
import { atServer, f32, matmul, program, sum } from "../src/index.js";
import { Rng } from "../src/lib/random.js";
import { useBackend, type BackendName } from "../src/runtime/backend.js";
import { median } from "./stats.js";

/** sum(matmul(a, b)) of two n x n matrices at the server: a run's time is the product's. */
export const gemmProgram = (n: number) => program({ a: atServer(f32([n, n])), b: atServer(f32([n, n])) }, ({ a, b }) => sum(matmul(a, b)));

/** An n x n matrix of uniform values in [-0.5, 0.5), the same for the same n. */
export function squareMatrix(n: number, stream = 0): Float32Array {
  const rng = Rng.fromSeed(n * 2 + stream);
  return new Float32Array(n * n).map(() => rng.float() - 0.5);
}

export interface GemmPeak {
  /** The best median rate over the sizes, GFLOP/s. */
  readonly gflops: number;
  /** The size that gave it. */
  readonly n: number;
}

/** The median rate of each size on `backend` (rounds after one warm-up), and the best of them. */
export async function gemmPeak(backend: BackendName = "onnx", sizes: readonly number[] = [512, 768, 1024], rounds = 7): Promise<GemmPeak> {
  await useBackend(backend);
  let best: GemmPeak = { gflops: 0, n: 0 };
  for (const n of sizes) {
    const gemm = gemmProgram(n);
    const [a, b] = [tf.tensor(squareMatrix(n, 0), [n, n]), tf.tensor(squareMatrix(n, 1), [n, n])];
    const times: number[] = [];
    for (let r = 0; r <= rounds; r++) {
      const start = performance.now();
      const out = await gemm.run({ a, b }, { backend });
      await out.data();
      out.dispose();
      if (r > 0) times.push(performance.now() - start);
    }
    tf.dispose([a, b]);
    await gemm.dispose();
    const gflops = (2 * n ** 3) / (median(times) / 1000) / 1e9;
    if (gflops > best.gflops) best = { gflops, n };
  }
  return best;
}

/** The line the round benches print: a round's rate as a share of the peak, against the goal. */
export function peakShareLine(variant: string, roundFlops: number, roundMs: number, peak: GemmPeak, goal: number): string {
  const gflops = roundFlops / (roundMs / 1000) / 1e9;
  return `  share of the onnx GEMM peak (${peak.gflops.toFixed(1)} GFLOP/s at N=${peak.n}, measured now): ${variant} ${(gflops / peak.gflops).toFixed(2)} (${gflops.toFixed(1)} GFLOP/s, fastest round)   (target >= ${goal})`;
}
