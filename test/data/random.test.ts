import { describe, expect, it } from "vitest";
import { Rng } from "../../src/lib/random.js";
import { expectFtError } from "./helpers.js";

const draws = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.uint32());

function meanAndVariance(values: readonly number[]): { mean: number; variance: number } {
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length;
  return { mean, variance };
}

describe("Rng streams", () => {
  it("gives the same numbers for the same seed and different ones for another seed", () => {
    expect(draws(Rng.fromSeed(42), 8)).toEqual(draws(Rng.fromSeed(42), 8));
    expect(draws(Rng.fromSeed(42), 8)).not.toEqual(draws(Rng.fromSeed(43), 8));
    expect(draws(Rng.fromSeed(-1), 8)).not.toEqual(draws(Rng.fromSeed(2 ** 32 - 1), 8));
    expect(draws(Rng.fromSeed(2 ** 40), 8)).not.toEqual(draws(Rng.fromSeed(0), 8));
  });

  it("keeps the stream of a seed fixed across versions (golden values)", () => {
    // A change here changes every seeded run, so it must be deliberate.
    expect(draws(Rng.fromSeed(42), 4)).toEqual([2478903587, 590457882, 1532201094, 3598170139]);
  });

  it("forks depend on the seed and label only, not on the parent's draws", () => {
    const fresh = Rng.fromSeed(7);
    const used = Rng.fromSeed(7);
    draws(used, 100);
    expect(draws(used.fork("init"), 8)).toEqual(draws(fresh.fork("init"), 8));
    expect(draws(fresh.fork("init"), 8)).not.toEqual(draws(fresh.fork("data"), 8));
    expect(draws(fresh.fork("init"), 8)).not.toEqual(draws(Rng.fromSeed(7), 8));
    expect(draws(fresh.fork("a").fork("b"), 8)).not.toEqual(draws(fresh.fork("b").fork("a"), 8));
    expect(draws(fresh.fork("round:1"), 8)).not.toEqual(draws(Rng.fromSeed(8).fork("round:1"), 8));
  });

  it("rejects seeds that are not safe integers", () => {
    expectFtError(() => Rng.fromSeed(1.5), "FT305", "seed");
    expectFtError(() => Rng.fromSeed(2 ** 60), "FT305", "seed");
  });
});

describe("Rng distributions", () => {
  it("draws uniform floats in [0, 1) with mean 1/2 and variance 1/12", () => {
    const rng = Rng.fromSeed(1);
    const values = Array.from({ length: 100_000 }, () => rng.float());
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    const { mean, variance } = meanAndVariance(values);
    expect(mean).toBeCloseTo(0.5, 2);
    expect(variance).toBeCloseTo(1 / 12, 3);
  });

  it("draws integers evenly over [min, max) (chi-square over 10 bins)", () => {
    const rng = Rng.fromSeed(2);
    const bins = new Array<number>(10).fill(0);
    for (let i = 0; i < 50_000; i++) bins[rng.int(-3, 7) + 3]! += 1;
    const chiSquare = bins.reduce((s, observed) => s + (observed - 5000) ** 2 / 5000, 0);
    expect(chiSquare).toBeLessThan(27.9); // the 0.999 quantile of chi-square with 9 degrees of freedom
    expect(rng.int(0, 2 ** 32)).toBeLessThan(2 ** 32);
    expectFtError(() => rng.int(5, 5), "FT305", "int(min, maxExclusive)");
    expectFtError(() => rng.int(0, 2 ** 32 + 1), "FT305");
  });

  it("draws normals with the requested mean and standard deviation", () => {
    const rng = Rng.fromSeed(3);
    const { mean, variance } = meanAndVariance(Array.from({ length: 100_000 }, () => rng.normal(2, 3)));
    expect(mean).toBeCloseTo(2, 1);
    expect(Math.sqrt(variance)).toBeCloseTo(3, 1);
  });

  it("draws gammas with mean shape*scale and variance shape*scale^2, for shapes below and above 1", () => {
    const rng = Rng.fromSeed(4);
    for (const [shape, scale] of [[0.3, 2], [1, 1], [5, 0.5]] as const) {
      const { mean, variance } = meanAndVariance(Array.from({ length: 60_000 }, () => rng.gamma(shape, scale)));
      expect(Math.abs(mean - shape * scale) / (shape * scale)).toBeLessThan(0.03);
      expect(Math.abs(variance - shape * scale * scale) / (shape * scale * scale)).toBeLessThan(0.08);
    }
    expectFtError(() => rng.gamma(0), "FT305", "gamma shape");
  });

  it("draws Dirichlet weights that sum to 1 with mean alpha_i / sum(alpha), even for tiny alpha", () => {
    const rng = Rng.fromSeed(5);
    const alpha = [1, 2, 7];
    const sums = [0, 0, 0];
    for (let i = 0; i < 20_000; i++) {
      const weights = rng.dirichlet(alpha);
      expect(weights.reduce((s, w) => s + w, 0)).toBeCloseTo(1, 12);
      weights.forEach((w, k) => (sums[k]! += w));
    }
    const means = sums.map((s) => s / 20_000);
    expect(means).toEqual([expect.closeTo(0.1, 2), expect.closeTo(0.2, 2), expect.closeTo(0.7, 2)]);
    const tiny = rng.dirichlet(new Array<number>(100).fill(0.001));
    expect(tiny.every((w) => Number.isFinite(w) && w >= 0)).toBe(true);
    expect(Math.max(...tiny)).toBeGreaterThan(0.5); // nearly all the mass on one entry
    expectFtError(() => rng.dirichlet([]), "FT305");
  });
});

describe("Rng permutations and samples", () => {
  it("shuffles in place into a permutation, each of the 6 orders of 3 about equally often", () => {
    const rng = Rng.fromSeed(6);
    const counts = new Map<string, number>();
    for (let i = 0; i < 60_000; i++) {
      const order = rng.shuffle(["a", "b", "c"]).join("");
      counts.set(order, (counts.get(order) ?? 0) + 1);
    }
    expect(counts.size).toBe(6);
    for (const count of counts.values()) expect(Math.abs(count - 10_000)).toBeLessThan(400);
    expect([...rng.permutation(1000)].sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it("samples distinct integers without replacement, each equally likely", () => {
    const rng = Rng.fromSeed(7);
    const hits = new Array<number>(20).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const picked = rng.sample(20, 5);
      expect(new Set(picked).size).toBe(5);
      for (const p of picked) hits[p]! += 1;
    }
    for (const h of hits) expect(Math.abs(h - 2500)).toBeLessThan(200);
    expect(rng.sample(4, 4).slice().sort()).toEqual(Int32Array.from([0, 1, 2, 3]));
    expect(rng.sample(4, 0)).toHaveLength(0);
    expectFtError(() => rng.sample(3, 4), "FT305", "sample(n, k)");
  });
});
