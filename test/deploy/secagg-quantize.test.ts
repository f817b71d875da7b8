/**
 * SecAgg+'s quantization (src/deploy/secagg/quantize.ts): clipping to [-c, c], then stochastic
 * rounding whose coin flips are 32-bit words compared with the fraction times 2^32, so that a
 * value rounds up with probability equal to its fraction and the expected value is exact.
 */
import { describe, expect, it } from "vitest";
import { quantizeVector } from "../../src/deploy/secagg/quantize.js";
import { webCryptoRandomBytes } from "../../src/deploy/secagg/random.js";
import { resolveSecAggParams } from "../../src/deploy/secagg/params.js";

const params = resolveSecAggParams({ round: 1, vector_length: 100_000, num_shares: 3, reconstruction_threshold: 2, clipping_range: 1, quantization_range: 2 ** 10, modulus_range: 2 ** 32 }, 3);
/** (v + c) Q / 2c = 512 + 512 v: a value's scaled form. */
const valueAt = (scaled: number) => (scaled - 512) / 512;

describe("SecAgg+ stochastic quantization", () => {
  it("rounds up with probability equal to the fraction (100,000 coordinates at fraction 0.3: within 6 standard deviations)", () => {
    const x = new Float32Array(100_000).fill(valueAt(700.3));
    const { values } = quantizeVector(x, params, webCryptoRandomBytes);
    const up = values.filter((q) => q === 701).length;
    expect(values.every((q) => q === 700 || q === 701)).toBe(true);
    const p = Math.fround(valueAt(700.3)) * 512 + 512 - 700;
    expect(Math.abs(up - 100_000 * p)).toBeLessThan(6 * Math.sqrt(100_000 * p * (1 - p)));
  });

  it("never rounds a whole number up, and clips to [0, Q] (counting what it clipped)", () => {
    const x = new Float32Array(100_000);
    x.fill(valueAt(700), 0, 50_000);
    x.fill(5, 50_000, 75_000);
    x.fill(-5, 75_000);
    const { values, clipped } = quantizeVector(x, params, webCryptoRandomBytes);
    expect(values.subarray(0, 50_000).every((q) => q === 700)).toBe(true);
    expect(values.subarray(50_000, 75_000).every((q) => q === 1024)).toBe(true);
    expect(values.subarray(75_000).every((q) => q === 0)).toBe(true);
    expect(clipped).toBe(50_000);
  });
});
