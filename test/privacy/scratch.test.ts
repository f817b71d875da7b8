import { test } from "vitest";
import { dpFedAvgProgram } from "../../src/lib/algorithms/dp-fedavg.js";
import { logistic } from "../../src/lib/models/dense.js";
import { Rng } from "../../src/lib/random.js";
test("empty", async () => {
  const p = dpFedAvgProgram(logistic, { adaptive: true });
  const params = logistic.init(Rng.fromSeed(0));
  for (const backend of ["cpu", "onnx"]) {
  try {
    const out = await p.run({ params, x: { shape: [0, 1, 10, 784], data: new Float32Array(0) }, y: { shape: [0, 1, 10], data: new Int32Array(0) }, mask: { shape: [0, 1, 10], data: new Float32Array(0) }, count: { shape: [0], data: new Float32Array(0) },
      lr: 0.1, clip: 1, noiseMultiplier: 1, expectedClients: 5, key: [1, 2], round: 1, targetQuantile: 0.5, clipLr: 0.2, countStddev: 0.25 } as never, { backend } as never);
    console.log(backend, "ok", (out as any).clip.dataSync());
  } catch (e) { console.log(backend, "fail", String(e).slice(0, 300)); }
  }
}, 60000);
