/**
 * The audit's statistics (clopper-pearson.ts) against values computed another way: the
 * incomplete beta of integer parameters is a binomial tail, I_p(k, n - k + 1) = P(Bin(n, p) >= k),
 * summed here term by term; closed forms at the interval's ends; a textbook interval.
 */
import { describe, expect, test } from "vitest";
import { betaQuantile, clopperPearson, logGamma, regularizedBeta } from "./clopper-pearson.js";

/** P(Bin(n, p) >= k) by summing the probability mass function. */
function binomialUpperTail(k: number, n: number, p: number): number {
  let total = 0;
  let logChoose = 0; // log C(n, j), updated as j grows
  for (let j = 0; j <= n; j++) {
    if (j > 0) logChoose += Math.log((n - j + 1) / j);
    if (j >= k) total += Math.exp(logChoose + j * Math.log(p) + (n - j) * Math.log1p(-p));
  }
  return total;
}

describe("Clopper-Pearson from the incomplete beta", () => {
  test("log Gamma matches factorials and Gamma(1/2)", () => {
    expect(logGamma(1)).toBeCloseTo(0, 13);
    expect(logGamma(11)).toBeCloseTo(Math.log(3628800), 11);
    expect(logGamma(0.5)).toBeCloseTo(0.5 * Math.log(Math.PI), 13);
    expect(logGamma(171.5) - logGamma(170.5)).toBeCloseTo(Math.log(170.5), 10);
  });

  test.each([
    [3, 10, 0.2],
    [1, 1, 0.5],
    [50, 200, 0.3],
    [190, 200, 0.97],
    [7, 5000, 0.001],
  ])("I_p(k, n-k+1) is the binomial tail P(Bin(n, p) >= k): k=%i n=%i p=%f", (k, n, p) => {
    const tail = binomialUpperTail(k, n, p);
    expect(Math.abs(regularizedBeta(p, k, n - k + 1) - tail)).toBeLessThan(1e-12 + 1e-10 * tail);
  });

  test("I_x(1, 1) = x, I_x(a, 1) = x^a, and the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)", () => {
    for (const x of [0.01, 0.3, 0.77]) {
      expect(regularizedBeta(x, 1, 1)).toBeCloseTo(x, 14);
      expect(regularizedBeta(x, 4.5, 1)).toBeCloseTo(x ** 4.5, 14);
      expect(regularizedBeta(x, 2.5, 7.25) + regularizedBeta(1 - x, 7.25, 2.5)).toBeCloseTo(1, 13);
    }
  });

  test("the quantile inverts the distribution function", () => {
    for (const [p, a, b] of [[0.025, 3, 8], [0.975, 1, 2000], [0.5, 0.5, 0.5]] as const) {
      expect(regularizedBeta(betaQuantile(p, a, b), a, b)).toBeCloseTo(p, 12);
    }
  });

  test("the interval's closed forms at 0 and n successes, and the textbook 5 of 20", () => {
    const n = 2000;
    expect(clopperPearson(0, n).upper).toBeCloseTo(1 - 0.025 ** (1 / n), 12);
    expect(clopperPearson(0, n).lower).toBe(0);
    expect(clopperPearson(n, n).lower).toBeCloseTo(0.025 ** (1 / n), 12);
    const { lower, upper } = clopperPearson(5, 20);
    expect(lower).toBeCloseTo(0.0866, 4);
    expect(upper).toBeCloseTo(0.491, 3);
  });
});
