/**
 * examples/federated-histogram.ts: private labels counted per client by a `helper`, released by
 * secureSum (exact) and dpSum (Gaussian noise of std z CLIP per bin). The misplaced-helper call
 * that tsc rejects is test/fixtures/type-errors/ft104-histogram-helper.ts (test/type-errors.test.ts).
 */
import { expect, test } from "vitest";
import {
  CLIP, DELTA, exactCounts, federatedHistogram, histogramInputs, labelCounts, NOISE_MULTIPLIER, releaseEpsilon, releaseHistograms, syntheticClients,
} from "../../examples/federated-histogram.js";
import { map, program, reduceSum } from "../../src/index.js";
import { Rng } from "../../src/lib/index.js";

test("the signature and program.privacy list both releases", () => {
  expect(federatedHistogram.signature).toBe(
    "(<labels={i32[N]}@CLIENTS(private),mask={f32[N]}@CLIENTS(private),maskKey=i32[2]@SERVER,noiseKey=i32[2]@SERVER> -> <secure=i32[10],noisy=f32[10]>@SERVER)" +
      " [secureSum of private data: exact sum, no DP; secureSum simulated in one process: the server derives every pair key]",
  );
  expect(federatedHistogram.privacy).toEqual([
    "secureSum #0: exact sum, no DP (masks simulated in one process), at least 2 clients, called once",
    "dpSum #1: Gaussian mechanism, clip 40, noise multiplier 1, rho = 0.5 zCDP per call, called once",
  ]);
  // One Gaussian release at z = 1 is rho = 1/2 zCDP; RDP accounting is at least as tight as
  // the zCDP conversion epsilon = rho + 2 sqrt(rho ln(1/delta)) (Bun and Steinke 2016).
  const rho = 1 / (2 * NOISE_MULTIPLIER ** 2);
  expect(releaseEpsilon()).toBeGreaterThan(1);
  expect(releaseEpsilon()).toBeLessThanOrEqual(rho + 2 * Math.sqrt(rho * Math.log(1 / DELTA)));
});

test("the secure histogram is the exact count; the DP one is within the noise of it", async () => {
  const clients = syntheticClients(Rng.fromSeed(7), 60);
  const exact = exactCounts(clients);
  const { secure, noisy } = await releaseHistograms(clients);
  expect(secure).toEqual(exact);
  // Each bin is the count plus N(0, (z CLIP)^2): every bin within 5 std, and the normalised
  // squared error, chi-squared with 10 degrees of freedom, in [0.5, 40] (each tail < 1e-5), so
  // a release without noise, or with the wrong scale of noise, fails.
  const std = NOISE_MULTIPLIER * CLIP;
  for (const [i, v] of noisy.entries()) expect(Math.abs(v - exact[i]!)).toBeLessThan(5 * std);
  const chiSquared = noisy.reduce((s, v, i) => s + ((v - exact[i]!) / std) ** 2, 0);
  expect(chiSquared).toBeGreaterThan(0.5);
  expect(chiSquared).toBeLessThan(40);
});

test("reduceSum of the private counts is FT109 while tracing (past tsc with a cast)", () => {
  expect(() =>
    program(histogramInputs, ({ labels, mask }) =>
      // tsc rejects this (FT109); the cast hides it so that tracing must catch it.
      reduceSum(map((y, m) => labelCounts(y, m), labels, mask) as never),
    ),
  ).toThrow(/^FT109: reduceSum\(\) would release private client data/);
});
