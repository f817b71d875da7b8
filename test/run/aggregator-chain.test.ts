/**
 * --aggregator as a chain (src/lib/run/aggregator-chain.ts): chains and their stages' options
 * from flags, a config file's list of stage objects, the single names that keep their
 * meaning, and the errors for chains and lists that cannot work.
 */
import { rmSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { chainKinds, runStages } from "../../src/lib/run/aggregator-chain.js";
import { distributedDpOptionsOf } from "../../src/lib/run/distributed-dp-run.js";
import { checkpointFileName } from "../../src/lib/run/checkpoint.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const config = (options: Record<string, unknown>) => validateRunConfig({ out: "unused", ...options }, "run.json");

describe("--aggregator chains", () => {
  test("single names keep their meaning; a chain's names are its stages", () => {
    expect(chainKinds("fedavg")).toEqual(["mean"]);
    expect(chainKinds("dp")).toEqual(["clip", "dp"]);
    expect(chainKinds("norm-clip")).toEqual(["clip"]);
    expect(chainKinds("clip,dp,secure")).toEqual(["clip", "dp", "secure"]);
    expect(chainKinds("clip,fedavg")).toBeUndefined();
  });

  test("each stage takes its options from the run's flags", async () => {
    const cfg = await loadRunConfig(["--aggregator", "quantize,clip,dp,secure", "--quantize-bits", "4", "--quantize-rotation", "--dp-clip", "0.5", "--dp-noise", "1.1", "--secure-bits", "28", "--algorithm", "fedadam"]);
    expect(runStages(cfg, 60, 7850)).toEqual([
      { kind: "quantize", bits: 4, rotation: true },
      { kind: "clip", bound: 0.5 },
      { kind: "dp" },
      { kind: "secure", bits: 28, clip: 1, maxWeight: 60, maxClients: 44, minClients: 2 },
    ]);
    expect(runStages(await loadRunConfig(["--aggregator", "zeroing,clip,median", "--zeroing-bound", "3", "--norm-bound", "2"]), 60, 7850)).toEqual([
      { kind: "zeroing", bound: 3 },
      { kind: "clip", bound: 2 },
      { kind: "median" },
    ]);
    const ddp = ["--aggregator", "zeroing,distributed-dp", "--ddp-clip", "0.5", "--ddp-bits", "18", "--min-clients", "4", "--clients-per-round", "8"];
    expect(runStages(await loadRunConfig([...ddp, "--ddp-noise", "1.2"]), 60, 7850)).toEqual([
      { kind: "zeroing", bound: 1 },
      { kind: "distributed-dp", clip: 0.5, noiseMultiplier: 1.2, bits: 18, minClients: 4, maxClients: 8 },
    ]);
    // --ddp-target-epsilon: the noise is calibrated to the released vector's length.
    const targeted = await loadRunConfig([...ddp, "--ddp-target-epsilon", "6"]);
    expect(runStages(targeted, 60, 7850)[1]).toEqual({ kind: "distributed-dp", ...distributedDpOptionsOf(targeted, 7850) });
  });

  test("a config file's aggregator may be a list of stage objects", () => {
    const cfg = config({ aggregator: [{ stage: "clip", bound: 1 }, { stage: "dp", noise: 1.1 }, { stage: "secure", bits: 30, clip: 0.5 }], algorithm: "fedprox" });
    expect([cfg.aggregator, cfg.dpClip, cfg.dpNoise, cfg.secureBits, cfg.secureClip]).toEqual(["clip,dp,secure", 1, 1.1, 30, 0.5]);
    expect(config({ aggregator: [{ stage: "clip", bound: 2 }, { stage: "mean" }] }).normBound).toBe(2);
    const ddp = config({ aggregator: [{ stage: "zeroing", bound: 2 }, { stage: "distributed-dp", clip: 0.5, noise: 1.2, bits: 18 }], algorithm: "fedadam" });
    expect([ddp.aggregator, ddp.zeroingBound, ddp.ddpClip, ddp.ddpNoise, ddp.ddpBits]).toEqual(["zeroing,distributed-dp", 2, 0.5, 1.2, 18]);
    expect(() => config({ aggregator: [{ stage: "dp", clip: 1 }] })).toThrow("FT305: aggregator (in run.json): stage dp has no option 'clip'; it takes noise, delta, targetEpsilon");
    expect(() => config({ aggregator: [{ stage: "average" }] })).toThrow(/FT305: aggregator \(in run.json\): a list of stage objects .* \(item 1 is not one\)/);
    expect(() => config({ aggregator: [{ stage: "dp", noise: 1 }, { stage: "clip", bound: 1 }] })).toThrow(/FT305: aggregator \(in run.json\): aggregator dp,clip: noise before clipping/);
  });

  test("chains that cannot work, and stages without their options, are FT305 with the reason", async () => {
    await expect(loadRunConfig(["--aggregator", "quantize,secure"])).rejects.toThrow("FT305: --aggregator: aggregator quantize,secure: the quantize stage needs --quantize-bits 1 to 16 (FT326)");
    await expect(loadRunConfig(["--aggregator", "secure,krum"])).rejects.toThrow(/krum needs each client's value/);
    await expect(loadRunConfig(["--aggregator", "clip,dp", "--algorithm", "afl"])).rejects.toThrow(/--algorithm afl cannot take --aggregator clip,dp: AFL's ascent on lambda/);
    await expect(loadRunConfig(["--quantize-rotation"])).rejects.toThrow("FT305: --quantize-rotation: applies only with --quantize-bits 1 to 16, not 0");
  });
});

describe("a run with an algorithm's state and the aggregator's", () => {
  test("FedAdam with clip,dp (adaptive) keeps both states: epsilon in every row, and a resumed run repeats an uninterrupted one", async () => {
    const options = { model: "logistic", clients: 20, clientsPerRound: 10, batchSize: 100, algorithm: "fedadam", aggregator: "clip,dp", dpClip: "adaptive", dpNoise: 0.8, rounds: 3, checkpointEvery: 1, keepCheckpoints: 3 };
    const stream = { write: () => true, isTTY: false };
    const out = tempDir("ft-chain-resume-");
    await train(validateRunConfig({ ...options, out }, "test"), stream);
    const straight = readMetrics(`${out}/metrics.jsonl`);
    expect(straight.map((row) => [row.round, row.train_loss])).toEqual([[1, null], [2, null], [3, null]]);
    const epsilons = straight.map((row) => row.epsilon as number);
    expect(epsilons[0]).toBeGreaterThan(0);
    expect(epsilons[1]).toBeGreaterThan(epsilons[0]!);
    expect(new Set(straight.map((row) => row.dp_clip)).size).toBe(3);
    rmSync(`${out}/${checkpointFileName(3)}`);
    await train(validateRunConfig({ ...options, out, resume: true }, "test"), stream, { given: ["resume"] });
    const resumed = readMetrics(`${out}/metrics.jsonl`);
    expect(resumed.map(({ seconds: _, ...row }) => row)).toEqual(straight.map(({ seconds: _, ...row }) => row));
  }, deadline(180_000));
});

