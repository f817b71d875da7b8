/**
 * Distributed DP on plain arrays (src/lib/privacy/distributed-dp-codec.ts) and its accounting
 * (src/lib/privacy/distributed-dp.ts): the sum comes back within the noise and rounding error,
 * also when the clients' vectors wrap around the modulus; the decoded noise's variance is the
 * calibrated one; the accounting agrees with computations written out here; and an empirical
 * audit (as test/privacy/audit.test.ts) bounds epsilon from below, under the reported epsilon
 * with the noise from the CSPRNG and above it when the adversary can regenerate the noise.
 */
import { describe, expect, test } from "vitest";
import { randomBits } from "../../src/ir/threefry.js";
import { distributedDpCodec, type RandomWords } from "../../src/lib/privacy/distributed-dp-codec.js";
import { calibrateDistributedDp, distributedDpEpsilon, distributedDpRoundRdp, noiseMultiplierForEpsilon, roundedL2Bound, sumOfDiscreteGaussiansTau } from "../../src/lib/privacy/distributed-dp.js";
import { discreteGaussianTable } from "../../src/ir/discrete-gaussian.js";
import { sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";
import { auditLowerBound } from "./audit-bound.js";

/** Random words from Threefry, a stream per (seed, call): reproducible, for the tests that need it. */
function seededWords(seed: number): RandomWords {
  let call = 0;
  return (out) => out.set(randomBits(new Int32Array([seed, call++]), out.length));
}

describe("codec", () => {
  const updates = [
    Float32Array.from({ length: 300 }, (_, i) => 0.05 * Math.sin(i)),
    Float32Array.from({ length: 300 }, (_, i) => -0.04 * Math.cos(0.3 * i)),
    Float32Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? -0.2 : 0.01)),
  ];
  const trueSum = updates[0]!.map((_, i) => updates.reduce((s, u) => s + u[i]!, 0));
  const norm = (v: ArrayLike<number>) => Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0));

  test("with little noise the decoded sum is the clients' sum within the rounding and noise error", () => {
    for (const u of updates) expect(norm(u)).toBeLessThan(2); // the clip of 2 leaves them as they are
    const codec = distributedDpCodec({ length: 300, clip: 2, noiseMultiplier: 1e-3, bits: 24, minClients: 3, maxClients: 3, rotationKey: [5, 6] });
    const cal = codec.calibration;
    expect(cal.dimension).toBe(512);
    const random = seededWords(1);
    const decoded = codec.decode(codec.sum(updates.map((u) => codec.encode(u, random))), 3);
    // Per coordinate of the rotated sum: rounding variance <= 3/4 and noise 3 sigma^2, in integer units; the rotation keeps it per coordinate on average.
    const std = Math.sqrt(3 / 4 + 3 * cal.localSigma ** 2) / cal.scale;
    const error = norm(decoded.map((v, i) => v - trueSum[i]!));
    expect(error).toBeLessThan(1.5 * std * Math.sqrt(512));
    expect(error).toBeLessThan(0.05 * norm(trueSum));
  });

  test("wrap-around: negative coordinates wrap to the top of 2^bits, and the sum of wrapped vectors decodes", () => {
    const codec = distributedDpCodec({ length: 300, clip: 2, noiseMultiplier: 0.01, bits: 12, minClients: 3, maxClients: 3, rotationKey: [7, 8] });
    const random = seededWords(2);
    const encoded = updates.map((u) => codec.encode(u, random));
    const modulus = 2 ** 12;
    // Some client values sit in the upper half (negative ones), so the plain integer sum exceeds the modulus.
    const plainSum = encoded.reduce((s, v) => s + v.reduce((a, b) => a + b, 0), 0);
    expect(encoded.some((v) => v.some((x) => x > modulus / 2))).toBe(true);
    expect(plainSum).toBeGreaterThan(modulus * 512);
    for (const v of encoded) for (const x of v) expect(x >= 0 && x < modulus).toBe(true);
    const decoded = codec.decode(codec.sum(encoded), 3);
    const std = Math.sqrt(3 / 4 + 3 * codec.calibration.localSigma ** 2) / codec.calibration.scale;
    expect(norm(decoded.map((v, i) => v - trueSum[i]!))).toBeLessThan(1.5 * std * Math.sqrt(512));
  });

  test("clipping, bad messages and too few clients", () => {
    const codec = distributedDpCodec({ length: 4, clip: 1, noiseMultiplier: 1e-3, bits: 20, minClients: 2, maxClients: 2, rotationKey: [1, 1] });
    const random = seededWords(3);
    const big = Float32Array.from([30, 40, 0, 0]);
    const decoded = codec.decode(codec.sum([codec.encode(big, random), codec.encode(new Float32Array(4), random)]), 2);
    // Clipped to norm 1: (0.6, 0.8, 0, 0).
    expect(decoded[0]).toBeCloseTo(0.6, 2);
    expect(decoded[1]).toBeCloseTo(0.8, 2);
    expect(() => codec.encode(Float32Array.from([NaN, 0, 0, 0]), random)).toThrow("FT347");
    expect(() => codec.encode(new Float32Array(5), random)).toThrow("FT347");
    expect(() => codec.sum([Int32Array.from([0, 1, 2, 2 ** 20])])).toThrow("FT347");
    expect(() => codec.decode(new Int32Array(4), 1)).toThrow("FT112: distributedDpSum() needs at least 2 clients, got 1");
    expect(() => distributedDpCodec({ length: 4, clip: 1, noiseMultiplier: 1, bits: 3, minClients: 2, maxClients: 100, rotationKey: [1, 1] })).toThrow("FT346");
  });

  test("the decoded noise has the calibrated variance: n sigma^2 / gamma^2 per coordinate", () => {
    const n = 5;
    const codec = distributedDpCodec({ length: 4096, clip: 1, noiseMultiplier: 1.3, bits: 18, minClients: n, maxClients: n, rotationKey: [9, 9] });
    const cal = codec.calibration;
    const random = seededWords(4);
    const zero = new Float32Array(4096);
    const decoded = codec.decode(codec.sum(Array.from({ length: n }, () => codec.encode(zero, random))), n);
    const variance = decoded.reduce((s, v) => s + v * v, 0) / decoded.length;
    const expected = (n * cal.localSigma ** 2) / cal.scale ** 2;
    // = (z c)^2: the calibration's promise at minClients.
    expect(expected).toBeCloseTo(1.3 ** 2, 6);
    // Gaussian-like coordinates: the variance estimate's standard error is sqrt(2/N) of it.
    expect(Math.abs(variance / expected - 1)).toBeLessThan(5 * Math.sqrt(2 / decoded.length));
  });
});

describe("accounting", () => {
  test("calibration: gamma fills 2^bits with k standard deviations; B is Theorem 1's bound", () => {
    const cal = calibrateDistributedDp({ clip: 0.5, noiseMultiplier: 0.8, bits: 16, minClients: 50, maxClients: 100, dimension: 1024 });
    const sigmaModel = (0.8 * 0.5) / Math.sqrt(50);
    const aggregateStd = Math.sqrt(((cal.scale * 100 * 0.5) ** 2) / 1024 + 100 * ((cal.scale * sigmaModel) ** 2 + 1 / 4));
    expect(2 * 4 * aggregateStd).toBeCloseTo(2 ** 16, 6);
    const gc = cal.scale * 0.5;
    const b2 = gc * gc + 1024 / 4 + Math.sqrt(2 * 0.5) * (gc + 16);
    expect(cal.l2Bound).toBeCloseTo(Math.min(gc + 32, Math.sqrt(b2)), 9);
    expect(roundedL2Bound(gc, Math.exp(-0.5), 1024)).toBe(cal.l2Bound);
  });

  test("with tau negligible one round is the Gaussian mechanism of noise multiplier sqrt(n) sigma / B (rdp.ts, q = 1)", () => {
    const cal = calibrateDistributedDp({ clip: 1, noiseMultiplier: 1.1, bits: 20, minClients: 10, maxClients: 20, dimension: 4096 });
    expect(sumOfDiscreteGaussiansTau(cal.localSigma, 20)).toBeLessThan(1e-300);
    const rounds = 30;
    const exactSampler = { relativeError: 0, totalVariation: 0 };
    const spent = distributedDpEpsilon(cal, rounds, 1e-5, exactSampler);
    const gaussian = sampledGaussianEpsilon({ samplingRate: 1, noiseMultiplier: cal.effectiveNoiseMultiplier, steps: rounds }, 1e-5);
    expect(spent.epsilon).toBeCloseTo(gaussian.epsilon, 9);
    // Written out: RDP R alpha / (2 z^2) at every order, converted by Balle et al. 2020's Theorem 21 at the same orders.
    const z = cal.effectiveNoiseMultiplier;
    const orders = [...Array.from({ length: 99 }, (_, i) => 1 + (i + 1) / 10), ...Array.from({ length: 52 }, (_, i) => 12 + i)];
    const byHand = Math.min(...orders.map((a) => (rounds * a) / (2 * z * z) + Math.log((a - 1) / a) - (Math.log(1e-5) + Math.log(a)) / (a - 1)));
    expect(spent.epsilon).toBeCloseTo(byHand, 9);
    // The real sampler's error costs a little: its total variation (2.4e9 draws of < 2^-95) enters delta with the factor 1 + e^eps, e^35 here.
    const table = discreteGaussianTable(cal.localSigma);
    const withSampler = distributedDpEpsilon(cal, rounds, 1e-5, table);
    expect(withSampler.epsilon).toBeGreaterThan(spent.epsilon);
    expect(withSampler.epsilon - spent.epsilon).toBeLessThan(0.01);
    expect(withSampler.samplerDelta).toBeCloseTo(rounds * 20 * 4096 * table.totalVariation * (1 + Math.exp(withSampler.epsilon)), 12);
  });

  test("tau: small sigma makes the sum of discrete Gaussians cost more, as Proposition 14's three terms say", () => {
    const sigma = 0.6;
    const n = 4;
    let tau = 0;
    for (let k = 1; k < n; k++) tau += 10 * Math.exp(-2 * Math.PI ** 2 * sigma ** 2 * (k / (k + 1)));
    expect(sumOfDiscreteGaussiansTau(sigma, n)).toBeCloseTo(tau, 15);
    const cal = { ...calibrateDistributedDp({ clip: 1, noiseMultiplier: 1, bits: 20, minClients: n, maxClients: n, dimension: 16 }), localSigma: sigma, l2Bound: 2, l1Bound: 4 };
    const [rdp] = distributedDpRoundRdp(cal, [8]);
    const s = 2 / (Math.sqrt(n) * sigma);
    const s1 = 4 / (Math.sqrt(n) * sigma);
    expect(rdp).toBeCloseTo(Math.min(4 * s * s + tau * 16, 4 * (s * s + 2 * s1 * tau + tau * tau * 16), 4 * (s + 4 * tau) ** 2), 12);
    expect(rdp!).toBeGreaterThan(4 * s * s);
  });

  test("the target form: the noise multiplier found spends the target epsilon (by this RDP accountant)", () => {
    const base = { clip: 1, bits: 20, minClients: 10, maxClients: 20, dimension: 4096 };
    const z = noiseMultiplierForEpsilon(base, 4, 25, 1e-5, "rdp");
    const cal = calibrateDistributedDp({ ...base, noiseMultiplier: z });
    const spent = distributedDpEpsilon(cal, 25, 1e-5).epsilon;
    expect(spent).toBeLessThanOrEqual(4);
    expect(spent).toBeGreaterThan(3.998);
  });
});

describe("privacy audit: distributed DP, a canary client against zeros", () => {
  const clip = 1;
  const z = 1;
  const clients = 3;
  const codec = distributedDpCodec({ length: 1, clip, noiseMultiplier: z, bits: 16, minClients: clients, maxClients: clients, rotationKey: [3, 4] });
  const reported = distributedDpEpsilon(codec.calibration, 1, 1e-5, codec.table).epsilon;
  const others = [Float32Array.from([0.3]), Float32Array.from([-0.5])];
  const canary = Float32Array.from([clip]);
  const zero = new Float32Array(1);

  /** The decoded sum with the third client's update `last`, noise words from `random` per client. */
  const release = (last: Float32Array, randoms: readonly RandomWords[]) => codec.decode(codec.sum([...others, last].map((u, c) => codec.encode(u, randoms[c]))), clients)[0]!;

  test("noise from the CSPRNG: the lower bound stays below the reported epsilon", () => {
    const trials = 6000;
    const without = Array.from({ length: trials }, () => release(zero, []));
    const withCanary = Array.from({ length: trials }, () => release(canary, []));
    const bound = auditLowerBound(without, withCanary);
    expect(reported).toBeGreaterThan(1);
    expect(reported).toBeLessThan(10);
    expect(bound).toBeLessThan(reported);
  });

  test("noise the adversary can regenerate (seeded words): subtracting it exposes the canary, the bound exceeds the reported epsilon", () => {
    const trials = 3000;
    const statistic = (last: Float32Array, t: number) => {
      const seeds = (salt: number) => [0, 1, 2].map((c) => seededWords(1_000_000 * salt + 1000 * t + c));
      // The adversary re-runs the release without the canary from the same seeds and subtracts it.
      return release(last, seeds(1)) - release(zero, seeds(1));
    };
    const without = Array.from({ length: trials }, (_, t) => statistic(zero, t));
    const withCanary = Array.from({ length: trials }, (_, t) => statistic(canary, t));
    expect(auditLowerBound(without, withCanary)).toBeGreaterThan(reported);
  });
});
