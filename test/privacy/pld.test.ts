/**
 * The PLD accountant (src/lib/privacy/pld): agreement with dp_accounting's PLD epsilons, exact
 * checks from closed forms (the Gaussian mechanism composes to the Gaussian of sigma / sqrt(k)),
 * pessimism (never below the true delta or epsilon), the discrete Gaussian, and its pieces
 * (normal tails, FFT) against independent computations.
 */
import { describe, expect, test } from "vitest";
import { PldAccountant } from "../../src/lib/privacy/pld/accountant.js";
import { fft } from "../../src/lib/privacy/pld/fft.js";
import { discreteGaussianCurve, subsampledGaussianCurve } from "../../src/lib/privacy/pld/mechanisms.js";
import { logNormalSf, normalSf } from "../../src/lib/privacy/pld/normal-tail.js";
import { deltaForEpsilon, epsilonForDelta, pldFromCurve, selfCompose } from "../../src/lib/privacy/pld/pmf.js";
import { sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";
import { dpFedAvgEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { FedTensorError } from "../../src/errors/error.js";
import { deadline } from "../helpers/deadline.js";

/** The Gaussian mechanism's exact delta(eps) for mu = sensitivity / sigma (Balle and Wang 2018, Theorem 8). */
const gaussianDelta = (mu: number, eps: number) => normalSf(eps / mu - mu / 2) - Math.exp(eps + logNormalSf(eps / mu + mu / 2));

/** Its exact epsilon at delta, by bisection on the closed form. */
function gaussianEpsilon(mu: number, delta: number): number {
  let [lo, hi] = [0, 5000];
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (gaussianDelta(mu, mid) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The subsampled Gaussian's delta(eps) on the remove side by quadrature over x (an independent computation). */
function subsampledDeltaByQuadrature(q: number, sigma: number, eps: number): number {
  const density = (x: number, mean: number) => Math.exp(-((x - mean) ** 2) / (2 * sigma * sigma)) / (sigma * Math.sqrt(2 * Math.PI));
  let sum = 0;
  const [a, b, n] = [-12 * sigma, 12 * sigma + 1, 400_000];
  const h = (b - a) / n;
  for (let i = 0; i <= n; i++) {
    const x = a + i * h;
    const p = (1 - q) * density(x, 0) + q * density(x, 1);
    const value = Math.max(0, p - Math.exp(eps) * density(x, 0));
    sum += (i === 0 || i === n ? 0.5 : 1) * value;
  }
  return sum * h;
}

describe("normal tails to double precision", () => {
  // Reference values: the upper tail of N(0, 1) to 16 digits (R's pnorm(t, lower.tail = FALSE)).
  test.each([
    [0, 0.5],
    [1, 0.15865525393145707],
    [3, 0.0013498980316300933],
    [5, 2.866515718791939e-7],
    [10, 7.619853024160525e-24],
    [20, 2.7536241186062337e-89],
    [-1, 0.8413447460685429],
  ])("P(Z > %d)", (t, expected) => {
    expect(Math.abs(normalSf(t) - expected) / expected).toBeLessThan(1e-13);
  });
});

describe("FFT", () => {
  test("a convolution by FFT equals the direct sum", () => {
    const a = Array.from({ length: 37 }, (_, i) => Math.sin(i) ** 2);
    const b = Array.from({ length: 21 }, (_, i) => 1 / (1 + i));
    const size = 64;
    const [ar, ai, br, bi] = [new Float64Array(size), new Float64Array(size), new Float64Array(size), new Float64Array(size)];
    ar.set(a);
    br.set(b);
    fft(ar, ai);
    fft(br, bi);
    for (let i = 0; i < size; i++) [ar[i], ai[i]] = [ar[i]! * br[i]! - ai[i]! * bi[i]!, ar[i]! * bi[i]! + ai[i]! * br[i]!];
    fft(ar, ai, true);
    for (let k = 0; k < a.length + b.length - 1; k++) {
      let direct = 0;
      for (let i = 0; i <= k; i++) direct += (a[i] ?? 0) * (b[k - i] ?? 0);
      expect(ar[k]! / size).toBeCloseTo(direct, 12);
    }
    expect(() => fft(new Float64Array(6), new Float64Array(6))).toThrow(FedTensorError);
  });
});

describe("PLD accountant: agreement with dp_accounting", () => {
  // dp_accounting's PLDAccountant (value_discretization_interval 1e-4), Poisson-subsampled
  // Gaussian, add/remove adjacency, delta 1e-5.
  test.each([
    [0.01, 1.0, 1000, 1.83],
    [0.1, 1.0, 100, 7.05],
  ])("q %d, sigma %d, %d steps: epsilon %d", (q, sigma, steps, expected) => {
    const epsilon = new PldAccountant().step(q, sigma, steps).epsilon(1e-5);
    expect(Math.abs(epsilon - expected)).toBeLessThan(0.01);
  }, deadline(60_000));
});

describe("PLD accountant: exact checks from closed forms", () => {
  // k compositions of the Gaussian mechanism (q = 1) are the Gaussian mechanism of sigma / sqrt(k).
  test.each([
    [1, 1],
    [2, 4],
    [3, 9],
    [10, 16],
  ])("sigma %d composed %d times: never below the exact epsilon, within 1e-3 of it", (sigma, k) => {
    const mu = Math.sqrt(k) / sigma;
    for (const delta of [1e-5, 1e-8]) {
      const exact = gaussianEpsilon(mu, delta);
      const epsilon = new PldAccountant().step(1, sigma, k).epsilon(delta);
      expect(epsilon).toBeGreaterThanOrEqual(exact);
      expect(epsilon - exact).toBeLessThan(1e-3);
    }
  }, deadline(60_000));

  test("the composed curve lies on or above the exact delta at every epsilon (pessimism)", () => {
    const [sigma, k] = [2, 4];
    const accountant = new PldAccountant().step(1, sigma, k);
    for (const eps of [0, 0.5, 1, 2, 3, 4, 6]) {
      const exact = gaussianDelta(Math.sqrt(k) / sigma, eps);
      expect(accountant.delta(eps)).toBeGreaterThanOrEqual(exact);
      expect(accountant.delta(eps) - exact).toBeLessThan(1e-6 * Math.max(exact, 1e-3));
    }
  }, deadline(60_000));

  test("one subsampled step: the closed form agrees with quadrature, and the PLD lies above it between grid points", () => {
    const [q, sigma] = [0.05, 0.8];
    const curve = subsampledGaussianCurve(q, sigma, "remove");
    const pld = pldFromCurve(curve, 1e-4);
    for (const eps of [0.01, 0.05, 0.2, 1, 2]) {
      const exact = subsampledDeltaByQuadrature(q, sigma, eps);
      expect(Math.abs(curve.delta(eps) - exact)).toBeLessThan(1e-7 * exact);
      // Off the grid (eps + h/3), where the interpolation, not the closed form, answers.
      const off = eps + 1e-4 / 3;
      expect(deltaForEpsilon(pld, off)).toBeGreaterThanOrEqual(curve.delta(off));
      expect(deltaForEpsilon(pld, off) - curve.delta(off)).toBeLessThan(1e-6 * curve.delta(off));
    }
  });

  test("the discrete Gaussian: one release's delta is the exact sum, and a wide one behaves as the continuous Gaussian", () => {
    const [sigma, d] = [2, 1];
    const pld = pldFromCurve(discreteGaussianCurve(sigma, d), 1e-4);
    // Exact: sum over k of (P(k) - e^eps Q(k))_+, P = N_Z(0, s^2), Q = N_Z(d, s^2).
    const weight = (k: number) => Math.exp(-(k * k) / (2 * sigma * sigma));
    let norm = 0;
    for (let k = -60; k <= 60; k++) norm += weight(k);
    for (const eps of [0, 0.1, 0.3, 0.7, 1.5]) {
      let exact = 0;
      for (let k = -60; k <= 60; k++) exact += Math.max(0, weight(k) / norm - (Math.exp(eps) * weight(k - d)) / norm);
      expect(deltaForEpsilon(pld, eps)).toBeGreaterThanOrEqual(exact);
      expect(deltaForEpsilon(pld, eps) - exact).toBeLessThan(1e-3 * Math.max(exact, 1e-3));
    }
    const wide = new PldAccountant().stepDiscreteGaussian(40, 40, 4).epsilon(1e-5);
    expect(Math.abs(wide - gaussianEpsilon(2, 1e-5))).toBeLessThan(0.01);
  }, deadline(60_000));
});

describe("PLD accountant: as an accountant", () => {
  test("PLD is tighter than RDP on common settings, never by much more than RDP's known slack", () => {
    for (const [q, sigma, steps] of [
      [0.01, 1.1, 500],
      [0.05, 1.5, 200],
    ] as const) {
      const pld = new PldAccountant().step(q, sigma, steps).epsilon(1e-5);
      const rdp = sampledGaussianEpsilon({ samplingRate: q, noiseMultiplier: sigma, steps }, 1e-5).epsilon;
      expect(pld).toBeLessThan(rdp);
      expect(pld).toBeGreaterThan(0.75 * rdp);
    }
  }, deadline(60_000));

  test("steps in phases compose: more steps spend more, and the order of phases does not matter", () => {
    const a = new PldAccountant().step(0.02, 1.0, 50).step(0.05, 2.0, 20);
    const b = new PldAccountant().step(0.05, 2.0, 20).step(0.02, 1.0, 25).step(0.02, 1.0, 25);
    expect(a.steps).toBe(70);
    expect(a.epsilon(1e-6)).toBeCloseTo(b.epsilon(1e-6), 8);
    expect(a.epsilon(1e-6)).toBeGreaterThan(new PldAccountant().step(0.02, 1.0, 50).epsilon(1e-6));
    expect(new PldAccountant().epsilon(1e-5)).toBe(0);
    expect(new PldAccountant().step(0, 1, 10).epsilon(1e-5)).toBe(0);
  }, deadline(60_000));

  test("epsilon past 20 is a number, with the noise sampler's total variation folded into each round", () => {
    // 20 rounds at q = 1 and z = 1 (the Gaussian of mu = sqrt(20)), 10^6 draws a round of the
    // sampler (2^-63 each). Charged to the whole run, the sampler's share (1 + e^eps) n 2^-63
    // exceeds delta past eps of about 15 (the RDP path's Infinity); charged round by round it
    // costs almost nothing.
    const samplerTv = 1e6 * 2 ** -63;
    const epsilon = new PldAccountant().step(1, 1, 20, samplerTv).epsilon(1e-5);
    const exact = gaussianEpsilon(Math.sqrt(20), 1e-5);
    expect(exact).toBeGreaterThan(20);
    expect(epsilon).toBeGreaterThanOrEqual(exact);
    expect(epsilon - exact).toBeLessThan(0.01);
    expect(dpFedAvgEpsilon({ samplingRate: 1, noiseMultiplier: 1, noiseDrawsPerRound: 1e6, samplerDeltaPerDraw: 2 ** -63 }, 20, 1e-5).epsilon).toBe(Infinity);
  }, deadline(60_000));

  test("a round of almost no noise is epsilon Infinity, not a crash; a window too wide is coarsened and stays above the exact epsilon", () => {
    expect(new PldAccountant().step(1, 1e-9, 3).epsilon(1e-5)).toBe(Infinity);
    // 8,000 rounds at q = 1, z = 2: sigma 2 / sqrt(8000) composed, a window past 2^22 points on the 1e-4 grid.
    const epsilon = new PldAccountant().step(1, 2, 8000).epsilon(1e-5);
    const exact = gaussianEpsilon(Math.sqrt(8000) / 2, 1e-5);
    expect(epsilon).toBeGreaterThanOrEqual(exact);
    expect(epsilon / exact - 1).toBeLessThan(0.05);
  }, deadline(120_000));

  test("bad input is refused with FT305", () => {
    expect(() => new PldAccountant().step(1.5, 1)).toThrow(FedTensorError);
    expect(() => new PldAccountant().step(0.1, 0)).toThrow(/FT305/);
    expect(() => new PldAccountant().step(0.1, 1, 2.5)).toThrow(/FT305/);
    expect(() => new PldAccountant().epsilon(0)).toThrow(/FT305/);
    expect(() => new PldAccountant({ interval: 2 })).toThrow(/FT305/);
  });

  test("a PLD's epsilon for delta and delta for epsilon are inverse", () => {
    const pld = selfCompose(pldFromCurve(subsampledGaussianCurve(0.1, 1.2, "remove"), 1e-4), 30);
    const eps = epsilonForDelta(pld, 1e-6);
    expect(deltaForEpsilon(pld, eps)).toBeCloseTo(1e-6, 12);
  }, deadline(60_000));
});
