/**
 * The discrete Gaussian sampler (src/lib/privacy/discrete-gaussian.ts): the alias table's
 * exact law against N_Z(0, sigma^2) computed directly (relative error within the bound it
 * states, mass one), and draws from Threefry words: mean, variance, tail frequency and a
 * chi-square test of the histogram.
 */
import { expect, test } from "vitest";
import { DISCRETE_GAUSSIAN_SAMPLER_ERROR, discreteGaussianOfWords, discreteGaussianPmf, discreteGaussianTable, DISCRETE_GAUSSIAN_WORDS, tableProbabilities } from "../../src/ir/discrete-gaussian.js";
import { randomBits } from "../../src/ir/threefry.js";

test.each([0.5, 1, 3.7, 100, 2000])("the table's law is N_Z(0, %f^2) within its stated error", (sigma) => {
  const table = discreteGaussianTable(sigma);
  const law = tableProbabilities(table);
  const t = Math.max(...law.keys());
  expect(Math.min(...law.keys())).toBe(-t);
  expect(table.size).toBeGreaterThanOrEqual(2 * t + 1);
  // Beyond T the tail holds < 2^-96, so T is about sqrt(2 * 96 ln 2) sigma = 11.5 sigma.
  expect(t).toBeLessThan(12 * sigma + 3);
  const reference = discreteGaussianPmf(sigma, t);
  let mass = 0;
  for (const [k, p] of law) {
    mass += p;
    const r = reference.get(k)!;
    // The float64 check itself reads the table through doubles (2^-52); heavy points are within relativeError.
    if (r > 1e-300 && r * table.size * 2 ** 128 >= 2 ** 60) expect(Math.abs(p / r - 1)).toBeLessThan(table.relativeError + 2 ** -40);
  }
  expect(mass).toBeCloseTo(1, 12);
  expect(table.tailMass).toBeLessThan(2 ** -96);
  expect(table.totalVariation).toBeLessThan(DISCRETE_GAUSSIAN_SAMPLER_ERROR.totalVariation);
});

test("sigma outside the sampler's range is FT346", () => {
  expect(() => discreteGaussianTable(0.4)).toThrow("FT346");
  expect(() => discreteGaussianTable(2 ** 17)).toThrow("FT346");
});

test("draws: mean 0, variance sigma^2, tails and a chi-square test of the histogram", () => {
  const sigma = 6.5;
  const table = discreteGaussianTable(sigma);
  const n = 200_000;
  const words = randomBits(new Int32Array([12, 34]), n * DISCRETE_GAUSSIAN_WORDS);
  const counts = new Map<number, number>();
  let sum = 0;
  let squares = 0;
  let beyond = 0;
  for (let i = 0; i < n; i++) {
    const k = discreteGaussianOfWords(table, words, i * DISCRETE_GAUSSIAN_WORDS);
    counts.set(k, (counts.get(k) ?? 0) + 1);
    sum += k;
    squares += k * k;
    if (Math.abs(k) > 2 * sigma) beyond++;
  }
  const pmf = discreteGaussianPmf(sigma, 80);
  const variance = [...pmf].reduce((v, [k, p]) => v + k * k * p, 0);
  // The discrete Gaussian's variance is below sigma^2 by a term of order exp(-2 pi^2 sigma^2), nil here.
  expect(variance).toBeCloseTo(sigma * sigma, 6);
  // Mean within 5 standard errors; variance within 5 of its (the 4th moment's) standard errors.
  expect(Math.abs(sum / n)).toBeLessThan((5 * sigma) / Math.sqrt(n));
  const fourth = [...pmf].reduce((v, [k, p]) => v + k ** 4 * p, 0);
  expect(Math.abs(squares / n - variance)).toBeLessThan(5 * Math.sqrt((fourth - variance * variance) / n));
  // P(|k| > 2 sigma), exactly from the pmf, against its frequency.
  const tail = [...pmf].filter(([k]) => Math.abs(k) > 2 * sigma).reduce((s, [, p]) => s + p, 0);
  expect(Math.abs(beyond / n - tail)).toBeLessThan(5 * Math.sqrt((tail * (1 - tail)) / n));
  // Chi-square over the bins with expected count >= 20 plus the two pooled tails.
  let chi = 0;
  let bins = 0;
  let pooledExpected = 0;
  let pooledSeen = 0;
  for (const [k, p] of pmf) {
    const expected = p * n;
    const seen = counts.get(k) ?? 0;
    if (expected >= 20) {
      chi += (seen - expected) ** 2 / expected;
      bins++;
    } else {
      pooledExpected += expected;
      pooledSeen += seen;
    }
  }
  chi += (pooledSeen - pooledExpected) ** 2 / pooledExpected;
  bins++;
  // df = bins - 1 (about 45): the 0.999 quantile is below df + 4.5 sqrt(2 df).
  const df = bins - 1;
  expect(chi).toBeLessThan(df + 4.5 * Math.sqrt(2 * df));
});
