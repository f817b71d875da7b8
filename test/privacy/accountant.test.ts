/**
 * RdpAccountant: the RDP of steps of the sampled Gaussian mechanism adds up, whatever the
 * sampling rate and noise of each step; against one call of ./rdp.ts and published values.
 */
import { describe, expect, test } from "vitest";
import { FedTensorError, RdpAccountant } from "../../src/index.js";
import { computeRdp, DEFAULT_RDP_ORDERS, rdpToEpsilon, sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";

describe("RdpAccountant", () => {
  test("steps one at a time with constant q and z equal one computation of all the steps", () => {
    const accountant = new RdpAccountant();
    for (let t = 0; t < 250; t++) accountant.step(0.02, 1.3);
    const once = computeRdp({ samplingRate: 0.02, noiseMultiplier: 1.3, steps: 250 });
    accountant.rdp().forEach((r, i) => expect(r).toBeCloseTo(once[i]!, 9));
    expect(accountant.steps).toBe(250);
    expect(accountant.epsilon(1e-5)).toBeCloseTo(sampledGaussianEpsilon({ samplingRate: 0.02, noiseMultiplier: 1.3, steps: 250 }, 1e-5).epsilon, 9);
    // step(q, z, count) is count steps.
    const counted = new RdpAccountant().step(0.02, 1.3, 250);
    expect(counted.epsilon(1e-5)).toBeCloseTo(accountant.epsilon(1e-5), 9);
  });

  test("changing q and z adds the RDP of each phase, and costs more than either phase alone", () => {
    const accountant = new RdpAccountant().step(0.01, 1.1, 300).step(0.05, 2.0, 100).step(0.01, 0.8, 20);
    const phases = [
      computeRdp({ samplingRate: 0.01, noiseMultiplier: 1.1, steps: 300 }),
      computeRdp({ samplingRate: 0.05, noiseMultiplier: 2.0, steps: 100 }),
      computeRdp({ samplingRate: 0.01, noiseMultiplier: 0.8, steps: 20 }),
    ];
    const total = DEFAULT_RDP_ORDERS.map((_, i) => phases.reduce((s, p) => s + p[i]!, 0));
    accountant.rdp().forEach((r, i) => expect(r).toBeCloseTo(total[i]!, 9));
    const eps = accountant.epsilon(1e-6);
    expect(eps).toBeCloseTo(rdpToEpsilon(DEFAULT_RDP_ORDERS, total, 1e-6).epsilon, 9);
    for (const phase of phases) expect(eps).toBeGreaterThan(rdpToEpsilon(DEFAULT_RDP_ORDERS, phase, 1e-6).epsilon);
    expect(accountant.steps).toBe(420);
  });

  // Abadi et al. 2016 (Deep Learning with Differential Privacy), section 3.1: "with L = 0.01N,
  // sigma = 4, delta = 1e-5, and T = 10000, we have epsilon ~ 1.26 using the moments accountant"
  // (integer orders, the classic conversion, which the moments accountant is).
  test("reproduces the moments accountant's example of Abadi et al.", () => {
    const orders = Array.from({ length: 31 }, (_, i) => i + 2);
    const accountant = new RdpAccountant({ orders, conversion: "classic" });
    for (let phase = 0; phase < 10; phase++) accountant.step(0.01, 4, 1000);
    expect(accountant.epsilon(1e-5).toFixed(2)).toBe("1.26");
    // Balle et al. 2020's conversion (the default) gives less for the same curve.
    expect(new RdpAccountant({ orders }).step(0.01, 4, 10000).epsilon(1e-5)).toBeLessThan(1.26);
  });

  // TF Privacy's rdp_accountant_test.py test_check_composition: 8.509656 at order 2.5 (classic).
  test("reproduces TF Privacy's composition of two mechanisms", () => {
    const orders = [1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 64, 256];
    const accountant = new RdpAccountant({ orders, conversion: "classic" }).step(1e-4, 0.4, 40000).step(0.1, 2, 100);
    const spent = accountant.spent(1e-5);
    expect(spent.epsilon).toBeCloseTo(8.509656, 4);
    expect(spent.order).toBe(2.5);
  });

  test("starts at zero and rejects bad steps with FT305 without changing its state", () => {
    const accountant = new RdpAccountant();
    expect(accountant.epsilon(1e-5)).toBe(0);
    accountant.step(0.1, 1, 3);
    const before = accountant.rdp();
    for (const step of [() => accountant.step(1.5, 1), () => accountant.step(0.1, -1), () => accountant.step(0.1, 1, 2.5), () => accountant.epsilon(0)]) {
      expect(step).toThrow(FedTensorError);
      expect(step).toThrow(/^FT305: /);
    }
    expect(accountant.rdp()).toEqual(before);
    expect(accountant.steps).toBe(3);
    expect(() => new RdpAccountant({ orders: [1] })).toThrow(/^FT305: orders/);
    expect(() => new RdpAccountant({ orders: [] })).toThrow(/^FT305: orders/);
  });
});
