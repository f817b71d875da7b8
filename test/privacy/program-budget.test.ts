/**
 * A program's price and budget (src/lib/privacy/program-epsilon.ts, src/front/budget.ts) and the
 * DP quantile (src/lib/algorithms/quantile.ts): program.epsilon() against the PLD accountant's
 * own figures and the Gaussian mechanism's closed form, the budget's checks (FT363) and what
 * cannot be priced (FT364); dpQuantile's and dpMedian's answers on known data and their cost.
 */
import { describe, expect, test } from "vitest";
import { add, atClients, atServer, dpSum, f32, FedTensorError, foldIn, fori, i32, program, reduceSum, secureSum, split } from "../../src/index.js";
import { normalSamplerDeltaPerDraw } from "../../src/ir/normal.js";
import { dpMedian, dpQuantile } from "../../src/lib/algorithms/quantile.js";
import { PldAccountant } from "../../src/lib/privacy/pld/accountant.js";
import { logNormalSf, normalSf } from "../../src/lib/privacy/pld/normal-tail.js";
import { programEpsilon } from "../../src/lib/privacy/program-epsilon.js";
import { sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";

const inputs = { readings: atClients(f32([3]), { private: true }), value: atClients(f32([]), { private: true }), key: atServer(i32([2])) };

/** Two releases a run: z 2 on a 3-vector and z 4 on a scalar, i.e. one Gaussian of z (1/4 + 1/16)^(-1/2) = 1.789. */
const twoReleases = program(
  inputs,
  ({ readings, value, key }) => {
    const [first, second] = split(key);
    return { mean: dpSum(readings, { clip: 1, noiseMultiplier: 2, key: first }), count: dpSum(value, { clip: 0.5, noiseMultiplier: 4, key: second }) };
  },
  { budget: { epsilon: 2, delta: 1e-5, rounds: 100, samplingRate: 0.01 } },
);

const gaussianEpsilon = (mu: number, delta: number): number => {
  let [lo, hi] = [0, 100];
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (normalSf(mid / mu - mu / 2) - Math.exp(mid + logNormalSf(mid / mu + mu / 2)) > delta) lo = mid;
    else hi = mid;
  }
  return hi;
};

describe("program.epsilon", () => {
  test("one Poisson-subsampled Gaussian a run, priced by the PLD accountant; the budget's numbers by default", async () => {
    const z = (1 / 4 + 1 / 16) ** -0.5;
    const spent = await twoReleases.epsilon();
    expect(spent.noiseMultiplier).toBeCloseTo(z, 12);
    const accountant = new PldAccountant().step(0.01, z, 100, 4 * normalSamplerDeltaPerDraw).epsilon(1e-5);
    expect(spent).toEqual({ epsilon: accountant, delta: 1e-5, rounds: 100, samplingRate: 0.01, accountant: "pld", noiseMultiplier: spent.noiseMultiplier, budget: { epsilon: 2, delta: 1e-5, rounds: 100, samplingRate: 0.01 }, withinBudget: accountant <= 2 });
    // The RDP cross-check is looser; q 1 and one run is the Gaussian mechanism's closed form.
    const rdp = programEpsilon(twoReleases, { accountant: "rdp" }).epsilon;
    expect(rdp).toBeGreaterThan(spent.epsilon);
    expect(rdp).toBeCloseTo(sampledGaussianEpsilon({ samplingRate: 0.01, noiseMultiplier: z, steps: 100 }, 1e-5).epsilon, 6);
    const once = programEpsilon(twoReleases, { samplingRate: 1, rounds: 1, delta: 1e-6 }).epsilon;
    expect(once).toBeGreaterThanOrEqual(gaussianEpsilon(1 / z, 1e-6));
    expect(once - gaussianEpsilon(1 / z, 1e-6)).toBeLessThan(1e-3);
  });

  test("a release in a loop counts each step; what cannot be priced is FT364; a bad budget is FT363", async () => {
    // One call before the loop and one in each of its 5 steps: 6 releases of z 3.
    const looped = program(inputs, ({ value, key }) => {
      const [first, rest] = split(key);
      return fori(5, dpSum(value, { clip: 1, noiseMultiplier: 3, key: first }), (i, total) => add(total, dpSum(value, { clip: 1, noiseMultiplier: 3, key: foldIn(rest, i) })));
    });
    expect(programEpsilon(looped).noiseMultiplier).toBeCloseTo(3 / Math.sqrt(6), 12);
    const fromInput = program({ ...inputs, z: atServer(f32([])) }, ({ value, key, z }) => dpSum(value, { clip: 1, noiseMultiplier: z, key }));
    expect(() => programEpsilon(fromInput)).toThrow(/^FT364: dpSum #0: its noise multiplier is not a number/);
    const exact = program({ counts: atClients(f32([]), { private: true }), key: atServer(i32([2])) }, ({ counts, key }) => secureSum(counts, { range: [0, 10], bits: 16, scale: 100, key }));
    expect(() => programEpsilon(exact)).toThrow(/^FT364: secureSum #0: a secure sum of private data releases their exact sum/);
    const plain = program({ counts: atClients(f32([])) }, ({ counts }) => reduceSum(counts));
    expect((await plain.epsilon({ rounds: 10 })).epsilon).toBe(0);
    for (const [budget, message] of [
      [{ epsilon: 0, delta: 1e-5 }, /^FT363: budget: epsilon 0: a finite number > 0/],
      [{ epsilon: 1, delta: 1 }, /^FT363: budget: delta 1: a number in \(0, 1\)/],
      [{ epsilon: 1, delta: 1e-5, rounds: 2.5 }, /^FT363: budget: rounds 2.5/],
      [{ epsilon: 1, delta: 1e-5, samplingRate: 0 }, /^FT363: budget: samplingRate 0/],
      [{ epsilon: 1, delta: 1e-5, round: 3 }, /^FT363: budget: unknown key round/],
    ] as const) {
      expect(() => program(inputs, ({ value, key }) => dpSum(value, { clip: 1, noiseMultiplier: 1, key }), { budget: budget as never })).toThrow(message);
    }
    expect(() => programEpsilon(twoReleases, { rounds: 0 })).toThrow(FedTensorError);
  });
});

describe("dpQuantile and dpMedian", () => {
  const clients = 1000;
  // 0, 1, ..., 999 in a shuffled order.
  const values = Array.from({ length: clients }, (_, i) => (i * 389) % clients);
  const quantiles = program({ value: atClients(f32([]), { private: true }), key: atServer(i32([2])) }, ({ value, key }) => {
    const [first, second] = split(key);
    return {
      median: dpMedian(value, { lower: 0, upper: 1024, noiseMultiplier: 1, key: first, steps: 14 }),
      p90: dpQuantile(value, { quantile: 0.9, lower: 0, upper: 1024, noiseMultiplier: 1, key: second, steps: 14 }),
    };
  });

  test("finds the median and the 90th percentile of known data within a few ranks", async () => {
    const out = (await quantiles.run({ value: values, key: [7, 11] } as never)) as unknown as Record<"median" | "p90", { data(): Promise<Float32Array>; dispose(): void }>;
    const [median, p90] = [(await out.median.data())[0]!, (await out.p90.data())[0]!];
    out.median.dispose();
    out.p90.dispose();
    // Noise of std z max(p, 1-p) <= 0.9 per count: a step errs only within a few ranks of the answer.
    expect(Math.abs(median - 499.5)).toBeLessThan(6);
    expect(Math.abs(p90 - 899.5)).toBeLessThan(6);
  });

  test("costs its steps' dpSum releases: 28 Gaussian sums of z 1, one mechanism of z 1 / sqrt(28) a run", () => {
    expect(quantiles.privacy).toHaveLength(28);
    expect(quantiles.privacy[0]).toBe("dpSum #0: Gaussian mechanism, clip 0.5, noise multiplier 1, rho = 0.5 zCDP per call, called once");
    const spent = programEpsilon(quantiles, { samplingRate: 1, rounds: 1, delta: 1e-5 });
    expect(spent.noiseMultiplier).toBeCloseTo(1 / Math.sqrt(28), 12);
    expect(spent.epsilon).toBe(new PldAccountant().step(1, spent.noiseMultiplier!, 1, 28 * normalSamplerDeltaPerDraw).epsilon(1e-5));
    expect(spent.epsilon).toBeGreaterThanOrEqual(gaussianEpsilon(Math.sqrt(28), 1e-5));
    expect(() => program({ value: atClients(f32([])), key: atServer(i32([2])) }, ({ value, key }) => dpQuantile(value, { quantile: 1, lower: 0, upper: 1, noiseMultiplier: 1, key }))).toThrow(/^FT305: dpQuantile quantile: 1 given/);
    // From plain JavaScript, a SERVER value is FT103 while tracing, as tsc says (test-d/lib-quantile.test-d.ts).
    const loose = dpMedian as (x: unknown, options: unknown) => never;
    expect(() => program({ value: atServer(f32([])), key: atServer(i32([2])) }, ({ value, key }) => loose(value, { lower: 0, upper: 1, noiseMultiplier: 1, key }))).toThrow(/^FT103: /);
  });
});
