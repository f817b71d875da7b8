/**
 * `fedtensor audit` (src/lib/run/audit.ts): the one-run audit of Steinke, Nasr and Jagielski
 * with canary clients through the run's chain, Poisson sampler and secret, beside Andrew et
 * al.'s estimate. On a private run the lower bound stays below the accountant's epsilon; with the
 * noise known (--dp-insecure-seed: the auditor regenerates it from the public seed) the audit
 * must fail: the lower bound exceeds the accountant. Small: 400 canaries, 4,096 coordinates (random directions that far apart barely overlap).
 */
import { describe, expect, test } from "vitest";
import { auditRun, oneRunLowerBound, oneRunPValue } from "../../src/lib/run/audit.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { deadline } from "../helpers/deadline.js";
import { inProcessCli, runCli } from "../run/cli.js";
import { tempDir } from "../run/temp-dir.js";

// q = 0.9: a canary that joins is sampled in at least one of the 3 rounds but for 1 in 1,000.
const base = { model: "logistic", clients: 50, clientsPerRound: 45, rounds: 3, aggregator: "clip,dp", dpClip: 1, dpNoise: 3 } as const;
const options = { canaries: 400, dimension: 4096 };

describe("one-run audit", () => {
  test("the p-value is the binomial tail under epsilon-DP's randomized response, plus the delta term", () => {
    // 20 guesses, all right, epsilon 0: P = 2^-20, plus 2 m delta max_i P[20 > B >= 20 - i] / i.
    expect(oneRunPValue(100, 20, 20, 0, 0)).toBeCloseTo(2 ** -20, 12);
    expect(oneRunPValue(100, 20, 20, 0, 1e-3)).toBeGreaterThan(2 ** -20);
    // Half right is what epsilon 0 gives: no bound.
    expect(oneRunLowerBound(100, 20, 10, 1e-5)).toBe(0);
    // All 40 right at 95%: (e^eps / (1 + e^eps))^40 = 0.05 at eps = log(p / (1 - p)), p = 0.05^(1/40).
    const p = 0.05 ** (1 / 40);
    expect(oneRunLowerBound(1000, 40, 40, 0)).toBeCloseTo(Math.log(p / (1 - p)), 4);
  });

  test("on a private run (the OS's secret) the lower bound stays below the accountant", () => {
    const result = auditRun(validateRunConfig({ ...base, out: tempDir("ft-audit-") }, "test"), options);
    expect(result.accountantName).toBe("pld");
    expect(result.accountant).toBeGreaterThan(0.5);
    expect(result.lowerBound).toBeLessThan(result.accountant);
    expect(result.guesses).toBe(80);
  }, deadline(120_000));

  test("with the noise known (--dp-insecure-seed) the audit fails: the lower bound exceeds the accountant", () => {
    const result = auditRun(validateRunConfig({ ...base, dpInsecureSeed: 9, out: tempDir("ft-audit-") }, "test"), options);
    expect(result.correct).toBeGreaterThanOrEqual(result.guesses - 2);
    expect(result.lowerBound).toBeGreaterThan(result.accountant);
    expect(result.estimate).toBeGreaterThan(result.accountant);
  }, deadline(120_000));

  test("fedtensor audit prints the bound, the estimate and the accountant, and exits 1 when the bound exceeds it", async () => {
    const args = ["audit", "--aggregator", "clip,dp", "--clients", "50", "--clients-per-round", "45", "--rounds", "3", "--dp-clip", "1", "--dp-noise", "3", "--canaries", "400", "--dimension", "4096"];
    const known = runCli([...args, "--dp-insecure-seed", "4"], 120_000);
    expect(known.stdout).toMatch(/empirical lower bound \(Steinke et al., 95%\) +[\d.]+\nestimate \(Andrew et al.\) +([\d.]+|Infinity)\naccountant \(pld\) +[\d.]+/);
    expect(known.stdout).toContain("FAILED");
    expect(known.status).toBe(1);
    const private_ = runCli(args, 120_000);
    expect(private_.stdout).toContain("passed");
    expect(private_.status).toBe(0);
    // A refusal before any data is read: through the CLI's main in this process, no process start-up.
    expect((await inProcessCli(["audit", "--canaries", "x"])).status).toBe(2);
  }, deadline(300_000));
});
