/**
 * --aggregator as a chain (src/lib/run/aggregator-chain.ts): chains and their stages' options
 * from flags, a config file's list of stage objects, the single names that keep their
 * meaning, and the errors for chains and lists that cannot work.
 */
import { describe, expect, test } from "vitest";
import { chainKinds, runStages } from "../../src/lib/run/aggregator-chain.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";

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
    expect(runStages(cfg, 60)).toEqual([
      { kind: "quantize", bits: 4, rotation: true },
      { kind: "clip", bound: 0.5 },
      { kind: "dp" },
      { kind: "secure", bits: 28, clip: 1, maxWeight: 60, maxClients: 44 },
    ]);
    expect(runStages(await loadRunConfig(["--aggregator", "zeroing,clip,median", "--zeroing-bound", "3", "--norm-bound", "2"]), 60)).toEqual([
      { kind: "zeroing", bound: 3 },
      { kind: "clip", bound: 2 },
      { kind: "median" },
    ]);
  });

  test("a config file's aggregator may be a list of stage objects", () => {
    const cfg = config({ aggregator: [{ stage: "clip", bound: 1 }, { stage: "dp", noise: 1.1 }, { stage: "secure", bits: 30, clip: 0.5 }], algorithm: "fedprox" });
    expect([cfg.aggregator, cfg.dpClip, cfg.dpNoise, cfg.secureBits, cfg.secureClip]).toEqual(["clip,dp,secure", 1, 1.1, 30, 0.5]);
    expect(config({ aggregator: [{ stage: "clip", bound: 2 }, { stage: "mean" }] }).normBound).toBe(2);
    expect(() => config({ aggregator: [{ stage: "dp", clip: 1 }] })).toThrow("FT305: aggregator (in run.json): stage dp has no option 'clip'; it takes noise, delta, targetEpsilon");
    expect(() => config({ aggregator: [{ stage: "average" }] })).toThrow(/FT305: aggregator \(in run.json\): a list of stage objects .* \(item 1 is not one\)/);
    expect(() => config({ aggregator: [{ stage: "dp", noise: 1 }, { stage: "clip", bound: 1 }] })).toThrow(/FT305: aggregator \(in run.json\): aggregator dp,clip: noise before clipping/);
  });

  test("chains that cannot work, and stages without their options, are FT305 with the reason", async () => {
    await expect(loadRunConfig(["--aggregator", "quantize,secure"])).rejects.toThrow("FT305: --aggregator: aggregator quantize,secure: the quantize stage needs --quantize-bits 1 to 16 (FT326)");
    await expect(loadRunConfig(["--aggregator", "secure,krum"])).rejects.toThrow(/krum needs each client's value/);
    await expect(loadRunConfig(["--aggregator", "clip,dp", "--algorithm", "scaffold"])).rejects.toThrow(/--algorithm scaffold cannot take --aggregator clip,dp: SCAFFOLD's control variates/);
    await expect(loadRunConfig(["--quantize-rotation"])).rejects.toThrow("FT305: --quantize-rotation: applies only with --quantize-bits 1 to 16, not 0");
  });
});
