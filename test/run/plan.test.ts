/**
 * A private run's plan (src/lib/run/plan.ts, `fedtensor plan`): the epsilon of each round by
 * the run's accountant before any data is read, the noise a target needs, and --max-epsilon's
 * refusal (FT360) of `fedtensor run` before a round or a data file is touched.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { dpFedAvgEpsilon, dpFedAvgPldEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { formatPlan, parameterCount, privacyPlan, refuseOverMaxEpsilon } from "../../src/lib/run/plan.js";
import { train } from "../../src/lib/run/train.js";
import { deadline } from "../helpers/deadline.js";
import { inProcessCli } from "./cli.js";
import { tempDir } from "./temp-dir.js";

const dp = { model: "logistic", clients: 100, clientsPerRound: 10, rounds: 12, aggregator: "clip,dp", dpNoise: 1.0 } as const;
const mechanism = { samplingRate: 0.1, noiseMultiplier: 1.0, noiseDrawsPerRound: 7850, samplerDeltaPerDraw: 2 ** -63 };

describe("privacy plan", () => {
  test("prints each round's epsilon and the total by the PLD accountant, RDP's with --accountant rdp", () => {
    const config = validateRunConfig({ ...dp, out: tempDir("ft-plan-") }, "test");
    expect(parameterCount(config)).toBe(7850);
    const plan = privacyPlan(config, 7850)!;
    expect(plan.accountant).toBe("pld");
    expect(plan.rows.map((r) => r.round)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    plan.rows.forEach((row) => expect(row.total).toBeCloseTo(dpFedAvgPldEpsilon(mechanism, row.round, 1e-5), 12));
    expect(plan.rows.reduce((sum, r) => sum + r.spent, 0)).toBeCloseTo(plan.total, 10);
    const rdp = privacyPlan(validateRunConfig({ ...dp, accountant: "rdp", out: tempDir("ft-plan-") }, "test"), 7850)!;
    expect(rdp.total).toBeCloseTo(dpFedAvgEpsilon(mechanism, 12, 1e-5).epsilon, 12);
    expect(plan.total).toBeLessThan(rdp.total);
    expect(formatPlan(plan)).toContain(`total over 12 rounds: epsilon ${plan.total.toFixed(4)}`);
  }, deadline(120_000));

  test("a target gets the smallest noise multiplier that meets it", () => {
    const config = validateRunConfig({ ...dp, out: tempDir("ft-plan-") }, "test");
    const { target } = privacyPlan(config, 7850, 2)!;
    const z = target!.noiseMultiplier;
    const at = (noise: number) => dpFedAvgPldEpsilon({ ...mechanism, noiseMultiplier: noise }, 12, 1e-5);
    expect(at(z)).toBeLessThanOrEqual(2);
    expect(at(z * 0.995)).toBeGreaterThan(2);
  }, deadline(240_000));

  test("--max-epsilon below the plan: run refuses with FT360 before reading data or writing a round", async () => {
    const out = tempDir("ft-plan-");
    const config = validateRunConfig({ ...dp, out, maxEpsilon: 1 }, "test");
    expect(() => refuseOverMaxEpsilon(config)).toThrow(/FT360: the run's plan spends epsilon [\d.]+ in 12 rounds, more than --max-epsilon 1/);
    await expect(train(config, { write: () => true, isTTY: false })).rejects.toThrow(FedTensorError);
    expect(existsSync(join(out, "metrics.jsonl"))).toBe(false);
    // Within it, nothing is refused.
    expect(() => refuseOverMaxEpsilon(validateRunConfig({ ...dp, out, maxEpsilon: 100 }, "test"))).not.toThrow();
  }, deadline(120_000));

  // Through the CLI's main in this process (plan reads no data): no process start-up per command.
  test("fedtensor plan from the command line: the table, the target's noise, exit 1 over --max-epsilon", async () => {
    const args = ["plan", "--aggregator", "clip,dp", "--clients", "100", "--clients-per-round", "10", "--rounds", "3", "--dp-noise", "1"];
    const shown = await inProcessCli([...args, "--target-epsilon", "5"]);
    expect(shown.stderr).toBe("");
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/accountant pld/);
    expect(shown.stdout).toMatch(/total over 3 rounds: epsilon [\d.]+ at delta 0.00001/);
    expect(shown.stdout).toMatch(/epsilon 5 in 3 rounds needs a noise multiplier of at least [\d.]+ \(pld\)/);
    const over = await inProcessCli([...args, "--max-epsilon", "0.5"]);
    expect(over.status).toBe(1);
    expect(over.stdout).toContain("FT360");
    expect((await inProcessCli(["plan", "--target-epsilon", "-1"])).status).toBe(2);
  }, deadline(300_000));
});
