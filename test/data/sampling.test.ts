/**
 * Client sampling for your own data: Poisson sampling includes each client independently with
 * probability q, fixed-size sampling draws m distinct clients uniformly, and the default source
 * is the OS CSPRNG, so knowing a run's seed does not reveal who was sampled (an attack that
 * works on a seeded sample fails on the default one).
 */
import { describe, expect, test } from "vitest";
import { fixedSizeSample, poissonSample, secretRandom } from "../../src/lib/data/sampling.js";
import { Rng } from "../../src/lib/random.js";
import { expectFtError } from "./helpers.js";

/** |observed - expected| in standard deviations of a binomial(trials, p). */
const sigmas = (observed: number, trials: number, p: number) => Math.abs(observed - trials * p) / Math.sqrt(trials * p * (1 - p));

describe("poissonSample", () => {
  test("each client is included with probability q, independently: inclusion rates and the size's variance", () => {
    const [n, q, trials] = [200, 0.1, 2000];
    const rng = Rng.fromSeed(5);
    const included = new Float64Array(n);
    const sizes: number[] = [];
    let bothFirstTwo = 0;
    for (let t = 0; t < trials; t++) {
      const sample = poissonSample(n, q, rng);
      sizes.push(sample.length);
      for (const i of sample) included[i]!++;
      if (sample[0] === 0 && sample[1] === 1) bothFirstTwo++;
    }
    for (let i = 0; i < n; i++) expect(sigmas(included[i]!, trials, q)).toBeLessThan(4.5);
    const mean = sizes.reduce((a, b) => a + b, 0) / trials;
    const variance = sizes.reduce((a, b) => a + (b - mean) ** 2, 0) / (trials - 1);
    expect(sigmas(mean * trials, n * trials, q)).toBeLessThan(4);
    // Binomial(n, q): variance n q (1 - q) = 18; a fixed-size sampler's would be 0.
    expect(variance / (n * q * (1 - q))).toBeGreaterThan(0.85);
    expect(variance / (n * q * (1 - q))).toBeLessThan(1.15);
    // Independence: clients 0 and 1 together with probability q^2.
    expect(sigmas(bothFirstTwo, trials, q * q)).toBeLessThan(4);
  });

  test("positions ascending, or an array's members in order; q 0 and 1; bad q is FT305", () => {
    const sample = poissonSample(50, 0.5, Rng.fromSeed(1));
    expect(Array.from(sample)).toEqual(Array.from(sample).sort((a, b) => a - b));
    expect(poissonSample(["a", "b", "c"], 1, Rng.fromSeed(1))).toEqual(["a", "b", "c"]);
    expect(poissonSample(10, 0, Rng.fromSeed(1))).toHaveLength(0);
    expectFtError(() => poissonSample(10, 1.5), "FT305", "q", "[0, 1], got 1.5");
    expectFtError(() => poissonSample(-1, 0.5), "FT305", "clients");
  });
});

describe("fixedSizeSample", () => {
  test("m distinct clients, ascending, every client equally likely", () => {
    const [n, m, trials] = [30, 7, 3000];
    const rng = Rng.fromSeed(9);
    const included = new Float64Array(n);
    for (let t = 0; t < trials; t++) {
      const sample = fixedSizeSample(n, m, rng);
      expect(sample).toHaveLength(m);
      expect(new Set(sample).size).toBe(m);
      expect(Array.from(sample)).toEqual(Array.from(sample).sort((a, b) => a - b));
      for (const i of sample) included[i]!++;
    }
    for (let i = 0; i < n; i++) expect(sigmas(included[i]!, trials, m / n)).toBeLessThan(4.5);
  });

  test("every pair equally likely (Floyd's algorithm is uniform over subsets, not only over members)", () => {
    const [n, m, trials] = [5, 2, 20000];
    const rng = Rng.fromSeed(4);
    const pairs = new Map<string, number>();
    for (let t = 0; t < trials; t++) {
      const key = Array.from(fixedSizeSample(n, m, rng)).join(",");
      pairs.set(key, (pairs.get(key) ?? 0) + 1);
    }
    expect(pairs.size).toBe(10);
    for (const count of pairs.values()) expect(sigmas(count, trials, 1 / 10)).toBeLessThan(4.5);
  });

  test("members of an array; m = 0 and m = n; m > n is FT305", () => {
    expect(fixedSizeSample(["a", "b", "c"], 3)).toEqual(["a", "b", "c"]);
    expect(fixedSizeSample(4, 0)).toHaveLength(0);
    expectFtError(() => fixedSizeSample(3, 4), "FT305", "m", "[0, 3]");
  });
});

describe("the default source is secret", () => {
  test("secretRandom draws floats in [0, 1) and integers in range", () => {
    const random = secretRandom();
    const floats = Array.from({ length: 4000 }, () => random.float());
    expect(floats.every((f) => f >= 0 && f < 1)).toBe(true);
    expect(Math.abs(floats.reduce((a, b) => a + b, 0) / floats.length - 0.5)).toBeLessThan(0.03);
    const ints = Array.from({ length: 1000 }, () => random.int(-3, 4));
    expect(new Set(ints)).toEqual(new Set([-3, -2, -1, 0, 1, 2, 3]));
    expectFtError(() => random.int(2, 2), "FT305", "int(min, maxExclusive)");
  });

  test("an attacker who knows the seed rebuilds a seeded sample, but not a default one", () => {
    const [n, q, m] = [256, 0.5, 128];
    // The attack: replay every seed in a range, as someone who read the run's --seed would.
    const rebuilds = (sample: Int32Array, draw: (rng: Rng) => Int32Array) =>
      Array.from({ length: 1000 }, (_, seed) => seed).some((seed) => draw(Rng.fromSeed(seed)).join() === sample.join());
    const poisson = (rng?: Rng) => poissonSample(n, q, rng);
    const fixed = (rng?: Rng) => fixedSizeSample(n, m, rng);
    expect(rebuilds(poisson(Rng.fromSeed(421)), poisson)).toBe(true);
    expect(rebuilds(fixed(Rng.fromSeed(421)), fixed)).toBe(true);
    expect(rebuilds(poisson(), poisson)).toBe(false);
    expect(rebuilds(fixed(), fixed)).toBe(false);
    // Two default draws differ (they agree with probability 2^-256).
    expect(poissonSample(n, q).join()).not.toBe(poissonSample(n, q).join());
  });
});
