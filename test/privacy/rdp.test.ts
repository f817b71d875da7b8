import { describe, expect, it } from "vitest";
import { computeRdp, DEFAULT_RDP_ORDERS, logErfc, rdpToEpsilon, sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";

describe("RDP of the sampled Gaussian mechanism", () => {
  it("is T * alpha / (2 z^2) at sampling rate 1 (the Gaussian mechanism composed T times)", () => {
    const orders = [1.5, 2, 7.25, 32];
    const rdp = computeRdp({ samplingRate: 1, noiseMultiplier: 1.3, steps: 17 }, orders);
    orders.forEach((alpha, i) => expect(rdp[i]).toBeCloseTo((17 * alpha) / (2 * 1.3 ** 2), 12));
  });

  it("agrees with the series at q -> 1 and is 0 without sampling", () => {
    const nearOne = computeRdp({ samplingRate: 1 - 1e-12, noiseMultiplier: 2, steps: 1 }, [3, 4.5]);
    expect(nearOne[0]).toBeCloseTo(3 / 8, 6);
    expect(nearOne[1]).toBeCloseTo(4.5 / 8, 6);
    expect(computeRdp({ samplingRate: 0, noiseMultiplier: 1, steps: 10 }, [2, 8])).toEqual([0, 0]);
  });

  // TensorFlow Privacy's rdp_accountant_test.py: test_compute_rdp_scalar and test_compute_rdp_sequence.
  it("matches TF Privacy's published values (integer and fractional orders)", () => {
    expect(computeRdp({ samplingRate: 0.1, noiseMultiplier: 2, steps: 10 }, [5])[0]).toBeCloseTo(0.07737, 5);
    const rdp = computeRdp({ samplingRate: 0.01, noiseMultiplier: 2.5, steps: 50 }, [1.5, 2.5, 5, 50, 100, Infinity]);
    const want = [0.00065, 0.001085, 0.00218075, 0.023846, 167.416307];
    want.forEach((w, i) => expect(Math.abs(rdp[i]! - w)).toBeLessThan(1e-5));
    expect(rdp[5]).toBe(Infinity);
  });

  it("grows with the order and shrinks with the noise", () => {
    const rdp = computeRdp({ samplingRate: 0.02, noiseMultiplier: 1, steps: 100 }, DEFAULT_RDP_ORDERS);
    for (let i = 1; i < rdp.length; i++) expect(rdp[i]!).toBeGreaterThanOrEqual(rdp[i - 1]! * (1 - 1e-9));
    const noisier = computeRdp({ samplingRate: 0.02, noiseMultiplier: 2, steps: 100 }, DEFAULT_RDP_ORDERS);
    noisier.forEach((r, i) => expect(r).toBeLessThan(rdp[i]!));
  });

  it("computes log erfc without underflow", () => {
    expect(Math.exp(logErfc(0.5))).toBeCloseTo(0.4795001221869535, 6);
    expect(Math.exp(logErfc(-1.2))).toBeCloseTo(1.9103139782296354, 6);
    // erfc(30) ~ 2.56e-393 underflows a double; its log does not: -x^2 - log(x sqrt(pi)) - 1/(2x^2)
    expect(logErfc(30)).toBeCloseTo(-900 - Math.log(30 * Math.sqrt(Math.PI)) - 1 / 1800, 4);
  });
});

describe("RDP to (epsilon, delta)", () => {
  // TF Privacy's test_get_privacy_spent_check_target_delta: constant RDP picks the largest order.
  it("uses Balle et al. 2020 by default and Mironov 2017 on request", () => {
    const orders = Array.from({ length: 31 }, (_, i) => i + 2);
    const improved = rdpToEpsilon(orders, orders.map(() => 1.1), 1e-5);
    expect(improved.order).toBe(32);
    expect(improved.epsilon).toBeCloseTo(1.32783806176, 9);
    const classic = rdpToEpsilon(orders, orders.map(() => 1.1), 1e-5, "classic");
    expect(classic.epsilon).toBeCloseTo(1.1 + Math.log(1e5) / 31, 12);
  });

  // TF Privacy's test_check_composition (classic conversion): 8.509656 at order 2.5.
  it("composes mechanisms by adding RDP", () => {
    const orders = [1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 64, 256];
    const a = computeRdp({ samplingRate: 1e-4, noiseMultiplier: 0.4, steps: 40000 }, orders);
    const b = computeRdp({ samplingRate: 0.1, noiseMultiplier: 2, steps: 100 }, orders);
    const spent = rdpToEpsilon(orders, a.map((r, i) => r + b[i]!), 1e-5, "classic");
    expect(spent.epsilon).toBeCloseTo(8.509656, 4);
    expect(spent.order).toBe(2.5);
  });

  // Abadi et al. 2016's DP-SGD on MNIST: lot 256 of 60,000, z = 1.1, 60 epochs, delta 1e-5.
  // TF Privacy's README: compute_dp_sgd_privacy.py --N=60000 --batch_size=256 --noise_multiplier=1.1
  // --epochs=60 --delta=1e-5 "satisfies differential privacy with eps = 3.01" (steps =
  // ceil(60 * 60000 / 256) = 14063, its default orders, the classic conversion; optimum at order 8.8).
  // The conversion of Balle et al. 2020 gives 2.597 for the same RDP curve.
  it("reproduces the DP-SGD MNIST epsilon", () => {
    const mnist = { samplingRate: 256 / 60000, noiseMultiplier: 1.1, steps: Math.ceil((60 * 60000) / 256) };
    const classic = sampledGaussianEpsilon(mnist, 1e-5, { conversion: "classic" });
    expect(classic.epsilon.toFixed(2)).toBe("3.01");
    expect(classic.order).toBe(8.8);
    const improved = sampledGaussianEpsilon(mnist, 1e-5);
    expect(improved.epsilon).toBeLessThan(classic.epsilon);
    expect(improved.epsilon).toBeCloseTo(2.5967, 4);
  });

  it("rejects parameters outside their ranges with FT305", () => {
    expect(() => computeRdp({ samplingRate: 1.5, noiseMultiplier: 1, steps: 1 })).toThrow(/FT305: samplingRate/);
    expect(() => computeRdp({ samplingRate: 0.1, noiseMultiplier: NaN, steps: 1 })).toThrow(/FT305: noiseMultiplier/);
    expect(() => computeRdp({ samplingRate: 0.1, noiseMultiplier: 1, steps: 1.5 })).toThrow(/FT305: steps/);
    expect(() => computeRdp({ samplingRate: 0.1, noiseMultiplier: 1, steps: 1 }, [1])).toThrow(/FT305: orders/);
    expect(() => rdpToEpsilon([2], [1], 0)).toThrow(/FT305: delta/);
    expect(() => rdpToEpsilon([2, 3], [1], 1e-5)).toThrow(/FT305: orders/);
  });
});
