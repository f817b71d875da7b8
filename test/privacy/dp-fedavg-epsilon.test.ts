/**
 * An independent check of the epsilon fedtensor run reports (src/lib/privacy/dp-fedavg-epsilon.ts on
 * rdp.ts's series), for the sampling that runs: Poisson sampling at rate q, add/remove
 * neighbours, sensitivity 1 in units of the clip, noise z.
 *
 * The second implementation here shares no code with rdp.ts: it integrates the Rényi
 * divergence of the Poisson-sampled Gaussian mixture numerically (Mironov, Talwar and Zhang
 * 2019, section 3: mu0 = N(0, z^2), mu = (1 - q) mu0 + q N(1, z^2)), in both directions,
 * D_alpha(mu || mu0) and D_alpha(mu0 || mu), taking the larger, on a fine grid of orders
 * (steps of 0.05 to 12, then 0.5, where rdp.ts uses 0.1 and then integers), and converts with Balle et al. 2020,
 * Theorem 21, written out again. The two must agree closely; the integral, minimised over more
 * orders, is lower where its orders include the optimum.
 */
import { describe, expect, test } from "vitest";
import { dpFedAvgEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { samplerDeltaPerDraw } from "../../src/lib/run/privacy.js";
import { deadline } from "../helpers/deadline.js";

const logSumExp2 = (a: number, b: number): number => Math.max(a, b) + Math.log1p(Math.exp(-Math.abs(a - b)));

/**
 * log of the integral of exp(logIntegrand(x)) over the real line, by Simpson's rule on a grid
 * of step z / 100 from -14 z to alpha + 14 z (the mass of mu0's tilt towards mu1 sits near
 * alpha; past that both tails are below e^-98), summed relative to the largest term.
 */
function logIntegral(logIntegrand: (x: number) => number, z: number, alpha: number): number {
  const h = z / 100;
  const n = 2 * Math.ceil((alpha + 28 * z) / (2 * h));
  const values = new Float64Array(n + 1);
  let top = -Infinity;
  for (let i = 0; i <= n; i++) {
    values[i] = logIntegrand(-14 * z + i * h);
    if (values[i]! > top) top = values[i]!;
  }
  let sum = 0;
  for (let i = 0; i <= n; i++) sum += (i === 0 || i === n ? 1 : i % 2 === 1 ? 4 : 2) * Math.exp(values[i]! - top);
  return top + Math.log((sum * h) / 3);
}

/** RDP of one step at order alpha by numerical integration. */
function integratedRdp(q: number, z: number, alpha: number): number {
  const logNormal = (x: number, mean: number) => -((x - mean) ** 2) / (2 * z * z) - Math.log(z * Math.sqrt(2 * Math.PI));
  // log mu(x) = log((1 - q) mu0(x) + q mu1(x))
  const logMixture = (x: number) => (q === 1 ? logNormal(x, 1) : logSumExp2(Math.log1p(-q) + logNormal(x, 0), Math.log(q) + logNormal(x, 1)));
  const forward = logIntegral((x) => alpha * logMixture(x) + (1 - alpha) * logNormal(x, 0), z, alpha);
  const backward = logIntegral((x) => alpha * logNormal(x, 0) + (1 - alpha) * logMixture(x), z, alpha);
  return Math.max(forward, backward) / (alpha - 1);
}

/** The orders of the check: 1.05, 1.10, ..., 12, then 12.5, 13, ..., 64. */
const orders = [...Array.from({ length: 220 }, (_, i) => 1.05 + i * 0.05), ...Array.from({ length: 104 }, (_, i) => 12.5 + i * 0.5)];

/** Epsilon at delta after `steps` compositions, minimised over the orders. */
function independentEpsilon(q: number, z: number, steps: number, delta: number): number {
  let best = Infinity;
  for (const alpha of orders) {
    const rdp = steps * integratedRdp(q, z, alpha);
    best = Math.min(best, rdp + Math.log((alpha - 1) / alpha) - (Math.log(delta) + Math.log(alpha)) / (alpha - 1));
  }
  return best;
}

const reported = (q: number, z: number, rounds: number, delta: number, draws = 0, perDraw = 0) =>
  dpFedAvgEpsilon({ samplingRate: q, noiseMultiplier: z, noiseDrawsPerRound: draws, samplerDeltaPerDraw: perDraw }, rounds, delta);

describe("the reported epsilon against an independent integral of the sampled Gaussian mixture", () => {
  test.each([
    // examples/dp-fedavg-mnist.json: q = 100 / 1000, z = 1, 100 rounds, delta 1e-5.
    [0.1, 1, 100, 1e-5],
    [0.1, 1.5, 100, 1e-5],
    // test/run/dp-run.test.ts's small runs: q = 5 / 20.
    [0.25, 1.1, 4, 1e-4],
    [0.5, 2, 1, 1e-5],
    [1, 1, 1, 1e-5],
  ])("q=%f z=%f rounds=%i delta=%f", (q, z, rounds, delta) => {
    const library = reported(q, z, rounds, delta).epsilon;
    const integral = independentEpsilon(q, z, rounds, delta);
    expect(integral).toBeLessThanOrEqual(library * (1 + 1e-6));
    expect(library).toBeLessThan(integral * 1.01);
  }, deadline(60_000));

  test("the sampler's share of delta, (1 + e^eps) n d for n draws within d of the exact normal each, comes off delta before the RDP conversion", () => {
    // The example: 199,211 draws a round (the 2NN's parameters and the adaptive count), 100 rounds, d = 2^-63 (src/ir/normal.ts).
    const draws = 199_211;
    for (const perDraw of [samplerDeltaPerDraw, 1e-17]) {
      const spent = reported(0.1, 1, 100, 1e-5, draws, perDraw);
      expect(spent.samplerDelta).toBeCloseTo(100 * draws * perDraw * (1 + Math.exp(spent.epsilon)), 20);
      expect(spent.rdpDelta + spent.samplerDelta).toBeLessThanOrEqual(1e-5);
      expect(spent.epsilon).toBeCloseTo(reported(0.1, 1, 100, spent.rdpDelta).epsilon, 12);
      expect(spent.epsilon).toBeGreaterThan(reported(0.1, 1, 100, 1e-5).epsilon);
    }
    expect(samplerDeltaPerDraw).toBe(2 ** -63);
    // 2e7 draws at 1e-15 with e^eps near 3000 would need 6e-5 of a delta of 1e-5: no finite epsilon.
    expect(reported(0.1, 1, 100, 1e-5, draws, 1e-15).epsilon).toBe(Infinity);
  });
});
