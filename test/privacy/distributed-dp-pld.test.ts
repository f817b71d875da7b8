/**
 * Distributed DP by the PLD accountant (src/lib/privacy/distributed-dp-pld.ts): never below the
 * true epsilon of a discrete Gaussian computed exactly over the integers, within 2e-3 of the
 * closed-form Gaussian mechanism it reduces to when the corrections are negligible (and of the
 * PLD accountant's grid for it), tighter than
 * the RDP bound it replaces, and what `fedtensor run`'s and `serve`'s rows use by default.
 */
import { describe, expect, test } from "vitest";
import type { DistributedDpCalibration } from "../../src/ir/distributed-dp-calibration.js";
import { calibrateDistributedDp, distributedDpEpsilon, noiseMultiplierForEpsilon } from "../../src/lib/privacy/distributed-dp.js";
import { distributedDpPldBound, distributedDpPldEpsilon } from "../../src/lib/privacy/distributed-dp-pld.js";
import { PldAccountant } from "../../src/lib/privacy/pld/accountant.js";
import { logNormalSf, normalSf } from "../../src/lib/privacy/pld/normal-tail.js";
import { distributedDpEpsilonAfter } from "../../src/lib/run/distributed-dp-run.js";
import { accountantOf } from "../../src/lib/run/privacy.js";

/** A calibration with the noise and bound given directly (integer units). */
function calibration(localSigma: number, l2Bound: number, clients: number, dimension: number): DistributedDpCalibration {
  return { clip: 1, noiseMultiplier: 1, bits: 20, minClients: clients, maxClients: clients, dimension, beta: Math.exp(-0.5), kStddevs: 4, scale: 1, localSigma, l2Bound, l1Bound: l2Bound * Math.min(Math.sqrt(dimension), l2Bound), effectiveNoiseMultiplier: (Math.sqrt(clients) * localSigma) / l2Bound };
}

/** The smallest eps with delta(eps) <= delta, by bisection on an exact decreasing delta(eps). */
function epsilonOf(delta: (eps: number) => number, target: number): number {
  let [lo, hi] = [0, 200];
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (delta(mid) > target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * The exact delta(eps) of k releases of N_Z(0, sigma^2) with integer shift m: the loss is
 * (k m^2 - 2 m S) / (2 sigma^2) with S the sum of k draws, whose law is convolved here over the integers.
 */
function discreteGaussianComposedDelta(sigma: number, m: number, k: number): (eps: number) => number {
  const K = Math.ceil(16 * sigma);
  const one = Array.from({ length: 2 * K + 1 }, (_, i) => Math.exp(-((i - K) ** 2) / (2 * sigma * sigma)));
  const norm = one.reduce((a, b) => a + b);
  let law = one.map((p) => p / norm);
  for (let step = 1; step < k; step++) {
    const next = new Array<number>(law.length + 2 * K).fill(0);
    law.forEach((p, i) => one.forEach((w, j) => (next[i + j]! += (p * w) / norm)));
    law = next;
  }
  const offset = (law.length - 1) / 2;
  return (eps) => law.reduce((sum, p, i) => {
    const loss = (k * m * m - 2 * m * (i - offset)) / (2 * sigma * sigma);
    return loss > eps ? sum + p * -Math.expm1(eps - loss) : sum;
  }, 0);
}

/** The Gaussian mechanism's exact delta(eps) for mu = sensitivity / sigma (Balle and Wang 2018). */
const gaussianDelta = (mu: number) => (eps: number) => normalSf(eps / mu - mu / 2) - Math.exp(eps + logNormalSf(eps / mu + mu / 2));

describe("distributed DP by PLD", () => {
  test.each([
    [6, 5, 4],
    [40, 30, 3],
  ])("one client, one coordinate, sigma %d, shift %d, %d rounds: never below the exact discrete Gaussian", (sigma, shift, rounds) => {
    const cal = calibration(sigma, shift, 1, 1);
    for (const delta of [1e-5, 1e-7]) {
      const exact = epsilonOf(discreteGaussianComposedDelta(sigma, shift, rounds), delta);
      const ours = distributedDpPldEpsilon(cal, rounds, delta);
      expect(ours).toBeGreaterThanOrEqual(exact);
      // The kernel's r^2 = 4 of variance is what it gives up: little once sigma is large.
      if (sigma >= 40) expect(ours / exact).toBeLessThan(1.02);
    }
  });

  test("many clients and coordinates: the Gaussian mechanism of noise sqrt(n sigma^2 - 4) / B, within 2e-3, never below", () => {
    const cal = calibration(30, 150, 100, 2 ** 16);
    const bound = distributedDpPldBound(cal)!;
    expect(bound.noiseMultiplier).toBeCloseTo(Math.sqrt(100 * 900 - 4) / 150, 12);
    // 100 x 65,536 draws a round at a ratio error of 2^-44 each: about 4e-7 of log-ratio.
    expect(bound.logRatio).toBeGreaterThan(0);
    expect(bound.logRatio).toBeLessThan(1e-6);
    for (const [rounds, delta] of [[1, 1e-5], [50, 1e-6]] as const) {
      const closedForm = epsilonOf(gaussianDelta(Math.sqrt(rounds) / bound.noiseMultiplier), delta);
      const ours = distributedDpPldEpsilon(cal, rounds, delta);
      expect(ours).toBeGreaterThanOrEqual(closedForm);
      expect(ours - closedForm).toBeLessThan(2e-3);
      // The PLD accountant's grid for the same Gaussian (no corrections) is above the closed form, and agrees.
      const grid = new PldAccountant().step(1, bound.noiseMultiplier, rounds).epsilon(delta);
      expect(grid).toBeGreaterThanOrEqual(closedForm);
      expect(Math.abs(grid - ours)).toBeLessThan(2e-3);
    }
  });

  test("tighter than the RDP bound on a calibrated run, and calibration needs less noise for a target", () => {
    const parameters = { clip: 1, bits: 16, minClients: 80, maxClients: 100, dimension: 8192 };
    const cal = calibrateDistributedDp({ ...parameters, noiseMultiplier: 1 });
    const pld = distributedDpPldEpsilon(cal, 10, 1e-5);
    const rdp = distributedDpEpsilon(cal, 10, 1e-5).epsilon;
    expect(pld).toBeLessThan(rdp);
    expect(pld).toBeGreaterThan(0.8 * rdp);
    const zPld = noiseMultiplierForEpsilon(parameters, 3, 10, 1e-5);
    const zRdp = noiseMultiplierForEpsilon(parameters, 3, 10, 1e-5, "rdp");
    expect(zPld).toBeLessThan(zRdp);
    expect(distributedDpPldEpsilon(calibrateDistributedDp({ ...parameters, noiseMultiplier: zPld }), 10, 1e-5)).toBeLessThanOrEqual(3);
  });

  test("runs name and use PLD by default, RDP with --accountant rdp; too little noise for the kernel is Infinity", () => {
    const config = { aggregator: "distributed-dp", rounds: 5, minClients: 8, clientsPerRound: 10, ddpNoise: 1, ddpBits: 16 };
    expect(accountantOf(config)).toBe("pld");
    expect(accountantOf({ ...config, accountant: "rdp" })).toBe("rdp");
    const pld = distributedDpEpsilonAfter(config, 5, 1000);
    const rdp = distributedDpEpsilonAfter({ ...config, accountant: "rdp" }, 5, 1000);
    expect(pld).toBeLessThan(rdp);
    expect(distributedDpPldEpsilon(calibration(1, 3, 2, 4), 1, 1e-5)).toBe(Infinity);
    expect(distributedDpPldEpsilon(calibration(30, 300, 100, 16), 0, 1e-5)).toBe(0);
  });
});
