/**
 * `fedtensor run --aggregator dp`: DP-FedAvg from the command line. Every metrics row carries
 * the epsilon the accountant gives for its round (PLD by default, RDP with --accountant rdp;
 * q = clientsPerRound / clients, z = --dp-noise, at --dp-delta) and the accountant's name, the
 * progress line shows it, --dp-target-epsilon stops the run
 * before the round that would exceed it, and bad values are FT305. The noise and the cohorts
 * come from the run's secret (secret.key), not the seed: see also test/privacy/secret-run.test.ts.
 */
import { readFileSync, rmSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { checkpointFileName } from "../../src/lib/run/checkpoint.js";
import { sampledGaussianEpsilon } from "../../src/lib/privacy/rdp.js";
import { dpFedAvgEpsilon, dpFedAvgPldEpsilon } from "../../src/lib/privacy/dp-fedavg-epsilon.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 5, batchSize: 100, checkpointEvery: 0, aggregator: "dp" } as const;

async function dpRun(options: Record<string, unknown>) {
  const lines: string[] = [];
  const out = tempDir("ft-dp-");
  const result = await train(validateRunConfig({ ...small, out, ...options }, "test"), { write: (s: string) => lines.push(s) > 0, isTTY: false });
  return { result, rows: readMetrics(`${out}/metrics.jsonl`), log: lines.join(""), out };
}

describe("fedtensor run --aggregator dp", () => {
  test("writes the accountant's epsilon into every row, increasing with the rounds, and shows it", async () => {
    const { rows, log, out } = await dpRun({ rounds: 4, dpClip: 0.5, dpNoise: 1.1, dpDelta: 1e-4 });
    expect(rows).toHaveLength(4);
    const epsilons = rows.map((row) => row.epsilon as number);
    // Poisson cohorts: each row says how many clients were aggregated.
    rows.forEach((row) => expect(Number.isInteger(row.clients) && (row.clients as number) >= 0 && (row.clients as number) <= 20).toBe(true));
    epsilons.forEach((epsilon, i) => {
      // The logistic model's 7,850 parameters are drawn each round: the sampler's share of delta is counted.
      const mechanism = { samplingRate: 5 / 20, noiseMultiplier: 1.1, noiseDrawsPerRound: 7850, samplerDeltaPerDraw: 2 ** -63 };
      // The PLD accountant by default: tighter than RDP's epsilon for the same rounds.
      expect(epsilon).toBeCloseTo(dpFedAvgPldEpsilon(mechanism, i + 1, 1e-4), 12);
      expect(epsilon).toBeLessThan(dpFedAvgEpsilon(mechanism, i + 1, 1e-4).epsilon);
      if (i > 0) expect(epsilon).toBeGreaterThan(epsilons[i - 1]!);
    });
    expect(rows.every((row) => row.dp_clip === 0.5 && row.accountant === "pld")).toBe(true);
    expect(log).toContain(`eps ${epsilons[3]!.toFixed(2)}`);
    expect(readFileSync(`${out}/plot.svg`, "utf8")).toContain("Privacy spent (epsilon)");
  }, deadline(120_000));

  test("--dp-target-epsilon stops the run before the round that would exceed it (--accountant rdp: RDP's epsilons)", async () => {
    const target = (sampledGaussianEpsilon({ samplingRate: 5 / 20, noiseMultiplier: 1, steps: 3 }, 1e-5).epsilon + sampledGaussianEpsilon({ samplingRate: 5 / 20, noiseMultiplier: 1, steps: 4 }, 1e-5).epsilon) / 2;
    const { rows, log, result } = await dpRun({ rounds: 10, dpClip: 1, dpNoise: 1, dpTargetEpsilon: target, evalEvery: 5, accountant: "rdp" });
    expect(rows.map((row) => row.round)).toEqual([1, 2, 3]);
    expect(rows.every((row) => row.accountant === "rdp")).toBe(true);
    // Round 3 is the run's last: evaluated though --eval-every is 5.
    expect(rows.map((row) => typeof row.test_accuracy)).toEqual(["object", "object", "number"]);
    expect(result.accuracy).toBe(rows[2]!.test_accuracy);
    expect(result.rounds).toBe(3);
    expect(log).toMatch(/privacy budget reached: round 4 would bring epsilon to [\d.]+ > --dp-target-epsilon [\d.]+ \(delta 0.00001\); stopping: 3 rounds spent epsilon/);
  }, deadline(120_000));

  test("adaptive clipping moves the clip from --dp-initial-clip toward the target quantile of update norms", async () => {
    const { rows } = await dpRun({ rounds: 3, dpClip: "adaptive", dpInitialClip: 0.01, dpClipLr: 0.5, dpNoise: 0.1, dpInsecureSeed: 3 });
    const clips = rows.map((row) => row.dp_clip as number);
    expect(clips[0]).toBeCloseTo(0.01, 6);
    // Every update is longer than 0.01, so each of a round's n clients adds -1/2 to the clipped count and
    // the fraction below is 1/2 - n / (2 * 5 expected clients) + noise: log(C'/C) = 0.5 * n / 10 - 0.5 * noise / 5.
    // The cohorts are Poisson (n is the row's clients column, often not 5); the count's noise has
    // stddev 5 / 20, so the log step's is 0.025: 4 of those is the tolerance. The research mode's
    // fixed secret makes the cohorts the same each time, large enough that a clip that did not move fails.
    expect(rows.slice(0, 2).map((row) => row.clients as number).every((n) => n >= 3)).toBe(true);
    for (const round of [0, 1]) {
      const step = Math.log(clips[round + 1]! / clips[round]!);
      expect(Math.abs(step - (rows[round]!.clients as number) / 20)).toBeLessThan(0.1);
    }
  }, deadline(120_000));

  test("a cohort streamed in chunks (MapReduce form, noise drawn once at the server) trains as the whole cohort does", async () => {
    // One cohort and one noise for both: the research mode's (the secret of a private run is new each time).
    const run = async (chunkClients: number) => (await dpRun({ rounds: 2, dpClip: "adaptive", dpNoise: 0.2, chunkClients, dpInsecureSeed: 7 })).rows;
    const [streamed, whole] = [await run(2), await run(100)];
    streamed.forEach((row, i) => {
      expect(row.test_loss as number).toBeCloseTo(whole[i]!.test_loss as number, 4);
      expect(row.dp_clip as number).toBeCloseTo(whole[i]!.dp_clip as number, 5);
    });
  }, deadline(120_000));

  test("a resumed DP run re-reads its secret: it repeats the rounds after its checkpoint exactly (same cohorts, same noise, same adaptive clip)", async () => {
    const options = { rounds: 4, dpClip: "adaptive", dpNoise: 0.2, checkpointEvery: 1, keepCheckpoints: 4 };
    const { rows: straight, out } = await dpRun(options);
    const stream = { write: () => true, isTTY: false };
    // As if the run had died after round 2: its later checkpoints are gone.
    for (const round of [3, 4]) rmSync(`${out}/${checkpointFileName(round)}`);
    await train(validateRunConfig({ ...small, ...options, out, resume: true }, "test"), stream, { given: ["resume"] });
    const resumed = readMetrics(`${out}/metrics.jsonl`);
    expect(resumed.map(({ seconds: _, ...row }) => row)).toEqual(straight.map(({ seconds: _, ...row }) => row));
    // Without its secret a private run does not resume: a new one would release rounds 3-4 again with fresh noise.
    rmSync(`${out}/secret.key`);
    await expect(train(validateRunConfig({ ...small, ...options, out, resume: true, rounds: 5 }, "test"), stream, { given: ["resume", "rounds"] })).rejects.toThrow(
      /^FT304: .*secret\.key: a private run resumes with the secret of its first rounds/,
    );
  }, deadline(120_000));

  test("bad DP options are FT305", async () => {
    await expect(loadRunConfig(["--aggregator", "secret"])).rejects.toThrow(/^FT305: --aggregator: expected stages separated by commas, [^"]+, got "secret"$/);
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-clip", "0"])).rejects.toThrow("FT305: --dp-clip: expected number > 0 | adaptive, got 0");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-clip", "big"])).rejects.toThrow("FT305: --dp-clip: expected number > 0 | adaptive, got \"big\"");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-noise", "-1"])).rejects.toThrow("FT305: --dp-noise: expected number > 0, got -1");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-delta", "1"])).rejects.toThrow("FT305: --dp-delta: expected number 0 < x < 1, got 1");
    await expect(loadRunConfig(["--dp-noise", "1"])).rejects.toThrow("FT305: --dp-noise: applies only with --aggregator a chain with dp, not fedavg");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-target-quantile", "0.5"])).rejects.toThrow("FT305: --dp-target-quantile: applies only with --dp-clip adaptive, not 1");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-clip", "adaptive", "--dp-target-quantile", "2"])).rejects.toThrow(
      "FT305: --dp-target-quantile: expected number 0 <= x <= 1, got 2",
    );
    // Any algorithm takes the dp stage now (docs/algorithms.md "Aggregator chains"); those that cannot say why.
    expect((await loadRunConfig(["--aggregator", "dp", "--algorithm", "fedprox"])).algorithm).toBe("fedprox");
    await expect(loadRunConfig(["--aggregator", "clip,dp", "--algorithm", "afl"])).rejects.toThrow(/^FT305: --aggregator: --algorithm afl cannot take --aggregator clip,dp: AFL's ascent on lambda/);
    await expect(loadRunConfig(["--aggregator", "dp,clip"])).rejects.toThrow("FT305: --aggregator: aggregator dp,clip: noise before clipping");
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-clip", "adaptive", "--dp-noise", "2"])).rejects.toThrow(
      "FT305: --dp-noise: adaptive clipping spends part of the noise on the clipped count (std 0.5 for 10 expected clients); --dp-noise 2 leaves none for the update",
    );
    await expect(loadRunConfig(["--aggregator", "dp", "--dp-clip", "adaptive"])).rejects.toThrow("FT305: --dp-clip: adaptive clipping spends");
    const config = await loadRunConfig(["--aggregator", "dp", "--dp-clip", "adaptive", "--clients-per-round", "100"]);
    expect([config.dpClip, config.dpTargetQuantile, config.dpClipLr, config.dpInitialClip, config.dpDelta, config.dpNoise]).toEqual(["adaptive", 0.5, 0.2, 0.1, 1e-5, 1]);
  });
});
