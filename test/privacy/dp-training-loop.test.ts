/**
 * examples/dp-training-loop.ts: multi-round DP training as one program, a SERVER loop of DP
 * rounds whose private data leaves only through dpSum. It traces (the model carried by the
 * loop stays free), lists its release with the cost of every round, and learns: the noisy
 * rounds bring the model much closer to the truth than where it started.
 */
import { expect, test } from "vitest";
import { dpTraining, FEATURES, ROUNDS, secretKey, syntheticCohort } from "../../examples/dp-training-loop.js";
import { Rng } from "../../src/lib/random.js";

test("the loop of DP rounds traces with private data, and its signature lists the release per round", () => {
  expect(dpTraining.signature).toBe(
    "(<w=f32[8]@SERVER,key=i32[2]@SERVER,x={f32[N,8]}@CLIENTS(private),y={f32[N]}@CLIENTS(private),lr=f32[]@SERVER,clients=f32[]@SERVER> -> f32[8]@SERVER)",
  );
  expect(dpTraining.privacy).toEqual([`dpSum #0: Gaussian mechanism, clip 1, noise multiplier 5, rho = 0.02 zCDP per call, called ${ROUNDS} times (loops)`]);
});

test("it runs and learns through the noise", async () => {
  const clients = 50;
  const { truth, x, y } = syntheticCohort(Rng.fromSeed(3), clients, 16);
  const key = secretKey();
  expect(key).toHaveLength(2);
  const out = await dpTraining.run({ w: new Array(FEATURES).fill(0), key, x, y, lr: 0.5, clients });
  const w = Array.from(await out.data());
  out.dispose();
  const rms = (v: readonly number[]) => Math.sqrt(v.reduce((s, e) => s + e * e, 0) / FEATURES);
  // Noise per round: z C / clients = 0.1 per coordinate of the mean; the start is about 1 from the truth.
  expect(rms(w.map((v, i) => v - truth[i]!))).toBeLessThan(0.35 * rms(truth));
});
