/**
 * A private run's secret end to end (fedtensor run --aggregator dp | secure): the secret comes
 * from the OS and lives only in the run folder's secret.key (mode 0600), never in the config,
 * the metrics, the plot or a checkpoint; two runs with one --seed add different noise and end
 * with different models; --dp-insecure-seed reproduces a run and says "not private" on every
 * progress line, metrics row and the plot; an empty Poisson cohort still releases a round;
 * every run's rows say how many clients were aggregated; the per-client evaluations that would
 * release private data outside the mechanism are FT305.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { poissonCohort } from "../../src/lib/data/federated.js";
import { RunSecret, SECRET_FILE } from "../../src/lib/privacy/secret.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "../run/temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 5, batchSize: 100, rounds: 2, checkpointEvery: 1, seed: 3 } as const;

async function run(options: Record<string, unknown>) {
  const out = tempDir("ft-secret-run-");
  const lines: string[] = [];
  const result = await train(validateRunConfig({ ...small, out, ...options }, "test"), { write: (s: string) => lines.push(s) > 0, isTTY: false });
  return { out, result, rows: readMetrics(join(out, "metrics.jsonl")), log: lines.join("") };
}

/** The final model's parameters, as plain numbers. */
async function finalParams(out: string): Promise<number[]> {
  const { params } = (await loadLatestCheckpoint(out))!.checkpoint.serverState as unknown as { params: Record<string, { data: Float32Array }> };
  return Object.keys(params).sort().flatMap((name) => Array.from(params[name]!.data));
}

const dp = { aggregator: "dp", dpClip: 0.5, dpNoise: 1 } as const;

describe("a private run's secret", () => {
  test("lives in secret.key (mode 0600) and in no other file of the run; two runs with one --seed end with different models", async () => {
    const first = await run(dp);
    const path = join(first.out, SECRET_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const hex = readFileSync(path, "utf8").trim();
    const raw = Buffer.from(hex, "hex");
    const key = JSON.stringify((await RunSecret.load(first.out)).key("dp-noise"));
    for (const name of readdirSync(first.out).filter((name) => name !== SECRET_FILE)) {
      const bytes = readFileSync(join(first.out, name));
      expect(bytes.includes(raw), name).toBe(false);
      expect(bytes.includes(hex), name).toBe(false);
      expect(bytes.includes(key.slice(1, -1)), name).toBe(false);
    }
    const second = await run(dp);
    expect(readFileSync(join(second.out, SECRET_FILE), "utf8")).not.toBe(readFileSync(path, "utf8"));
    const [a, b] = [await finalParams(first.out), await finalParams(second.out)];
    expect(a.length).toBe(7850);
    expect(a.filter((v, i) => v !== b[i]).length).toBeGreaterThan(7000);
    // The rows say how many clients each Poisson cohort aggregated.
    for (const row of [...first.rows, ...second.rows]) expect(Number.isInteger(row.clients)).toBe(true);
  }, deadline(120_000));

  test("--dp-insecure-seed reproduces a run, writes no secret.key, and says 'not private' on every round line, metrics row and the plot", async () => {
    const [a, b] = [await run({ ...dp, dpInsecureSeed: 11 }), await run({ ...dp, dpInsecureSeed: 11 })];
    expect(await finalParams(a.out)).toEqual(await finalParams(b.out));
    expect(readdirSync(a.out)).not.toContain(SECRET_FILE);
    const roundLines = a.log.split("\n").filter((line) => line.startsWith("round "));
    expect(roundLines).toHaveLength(2);
    for (const line of roundLines) expect(line).toContain("NOT PRIVATE (--DP-INSECURE-SEED)");
    for (const row of a.rows) expect(row.privacy).toBe("not private (--dp-insecure-seed)");
    expect(readFileSync(join(a.out, "plot.svg"), "utf8")).toContain("not private (--dp-insecure-seed)");
    // A private run has no such column.
    expect((await run({ ...dp, rounds: 1 })).rows[0]).not.toHaveProperty("privacy");
  }, deadline(120_000));

  test("a round whose Poisson cohort is empty still releases (the noise alone) and is accounted; it is not skipped", async () => {
    // q = 1/20: find a research seed whose round 1 samples nobody (about one in three do).
    let seed = 1;
    while (poissonCohort(20, 1 / 20, RunSecret.fromInsecureSeed(seed).cohortStream(1)).length > 0) seed++;
    const { rows, log, out } = await run({ ...dp, clientsPerRound: 1, dpInsecureSeed: seed, rounds: 1 });
    expect(rows[0]!.clients).toBe(0);
    expect(rows[0]!.epsilon).toBeGreaterThan(0);
    expect(log).not.toContain("skipped");
    const init = validateRunConfig({ ...small, ...dp, out: tempDir("ft-empty-"), rounds: 1, clientsPerRound: 1, dpInsecureSeed: seed, dpNoise: 1e-9 }, "test");
    await train(init, { write: () => true, isTTY: false });
    // With (almost) no noise the empty round leaves the model as it was; with z = 1 it moved by the noise alone.
    const [noisy, still] = [await finalParams(out), await finalParams(init.out)];
    expect(noisy.filter((v, i) => Math.abs(v - still[i]!) > 1e-4).length).toBeGreaterThan(7000);
  }, deadline(120_000));

  test("every algorithm's rows carry the clients aggregated; a secure run says it is a simulation and keeps its mask key secret", async () => {
    const plain = await run({ rounds: 1 });
    expect(plain.rows[0]!.clients).toBe(5);
    const secure = await run({ aggregator: "secure", rounds: 1 });
    expect(secure.rows[0]!.clients).toBe(5);
    expect(secure.rows[0]!.train_loss).toBeNull();
    expect(secure.log).toContain("secure aggregation is simulated in this process: the server holds the key every pair key derives from");
    expect(statSync(join(secure.out, SECRET_FILE)).mode & 0o777).toBe(0o600);
  }, deadline(120_000));

  test("per-client evaluation goes with dp (its DP histograms, PLD or RDP accountant), secure and distributed-dp chains; --min-clients is FT305 with dp, saying why", async () => {
    for (const flags of [["--client-holdout", "0.2"], ["--client-holdout", "0.2", "--eval-clients", "3"], ["--client-holdout", "0.2", "--personalize-epochs", "1"]]) {
      await expect(loadRunConfig(["--aggregator", "distributed-dp", "--accountant", "rdp", ...flags])).resolves.toMatchObject({ clientHoldout: 0.2, accountant: "rdp" });
      await expect(loadRunConfig(["--aggregator", "clip,dp", "--accountant", "rdp", ...flags])).resolves.toMatchObject({ clientHoldout: 0.2, accountant: "rdp" });
      for (const aggregator of ["clip,dp", "secure", "clip,dp,secure", "distributed-dp"]) await expect(loadRunConfig(["--aggregator", aggregator, ...flags])).resolves.toMatchObject({ clientHoldout: 0.2 });
    }
    await expect(loadRunConfig(["--aggregator", "dp", "--min-clients", "2"])).rejects.toThrow(
      "FT305: --min-clients: a DP round runs whatever its Poisson cohort's size (skipping one would release that size outside the accountant)",
    );
    await expect(loadRunConfig(["--dp-insecure-seed", "4"])).rejects.toThrow("FT305: --dp-insecure-seed: applies only with --aggregator a chain with dp, not fedavg");
  });
});
