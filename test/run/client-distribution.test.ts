/**
 * The distribution across clients: percentiles as numpy.percentile's default (linear) gives
 * them on known lists, the unweighted and example-weighted means, and clients without held-out
 * examples left out.
 */
import { describe, expect, test } from "vitest";
import { distribution, distributionColumns, percentile } from "../../src/lib/run/client-distribution.js";

describe("percentile", () => {
  // Values from numpy: np.percentile([1, 2, 3, 4], [10, 50, 90]) and np.percentile([15, 20, 35, 40, 50], [10, 50, 90]).
  test.each([
    [[1, 2, 3, 4], 10, 1.3],
    [[1, 2, 3, 4], 50, 2.5],
    [[1, 2, 3, 4], 90, 3.7],
    [[40, 15, 50, 35, 20], 10, 17],
    [[40, 15, 50, 35, 20], 50, 35],
    [[40, 15, 50, 35, 20], 90, 46],
    [[7], 90, 7],
    [[3, 1], 0, 1],
    [[3, 1], 100, 3],
  ])("of %j at %d is %d", (values, p, want) => {
    expect(percentile(values, p)).toBeCloseTo(want, 12);
  });

  test("of no values is NaN; p outside [0, 100] is an error", () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });
});

describe("distribution", () => {
  test("the mean counts each client once, the weighted mean each example; empty clients are left out", () => {
    // Clients with 10, 30, 0 and 60 examples, accuracies 0.5, 0.9, (none), 0.8.
    const d = distribution([0.5, 0.9, 0, 0.8], [10, 30, 0, 60]);
    expect(d.clients).toBe(3);
    expect(d.mean).toBeCloseTo((0.5 + 0.9 + 0.8) / 3, 12);
    expect(d.weighted).toBeCloseTo((0.5 * 10 + 0.9 * 30 + 0.8 * 60) / 100, 12);
    expect(d.p50).toBeCloseTo(0.8, 12);
    expect(d.p10).toBeCloseTo(0.5 + 0.2 * 0.3, 12);
    expect(d.p90).toBeCloseTo(0.8 + 0.8 * 0.1, 12);
    expect(Object.keys(distributionColumns("client_accuracy", d))).toEqual([
      "client_accuracy_mean",
      "client_accuracy_weighted",
      "client_accuracy_p10",
      "client_accuracy_p50",
      "client_accuracy_p90",
    ]);
  });
});
