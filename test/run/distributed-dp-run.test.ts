/**
 * `fedtensor run --aggregator distributed-dp`: the distributed-dp stage, whose sum is
 * distributedDpSum's. With little noise FedAvg and FedProx train as they do without it (the
 * same cohorts; the sums differ by the clip, the rounding and the noise only); each row reports
 * the epsilon the accountant computes for its round (none when the noise is too small for a
 * finite one; MimeLite's for its two trees); the run's keys come from its secret (secret.key in
 * the run folder); options and chains are checked.
 */
import { existsSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { hadamardLength } from "../../src/front/rotation.js";
import { calibrateDistributedDp, distributedDpEpsilon } from "../../src/lib/privacy/distributed-dp.js";
import { distributedDpPldEpsilon } from "../../src/lib/privacy/distributed-dp-pld.js";
import { RunSecret } from "../../src/lib/privacy/secret.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { distributedDpEpsilonAfter, distributedDpOptionsOf } from "../../src/lib/run/distributed-dp-run.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 5, batchSize: 100, checkpointEvery: 0, rounds: 2 } as const;

async function run(options: Record<string, unknown>) {
  const out = tempDir("ft-ddp-");
  await train(validateRunConfig({ ...small, out, ...options }, "test"), { write: () => true, isTTY: false });
  return { rows: await readMetrics(`${out}/metrics.jsonl`), out };
}

describe("fedtensor run --aggregator distributed-dp", () => {
  test("with little noise and a large clip FedAvg, FedProx and FedAdam train as without it (epsilon: none finite)", async () => {
    for (const algorithm of ["fedavg", "fedprox", "fedadam"]) {
      const plain = (await run({ algorithm })).rows;
      const options = { algorithm, aggregator: "distributed-dp", ddpClip: 100, ddpNoise: 1e-4, ddpBits: 20, minClients: 5, chunkClients: 2 };
      const { rows, out } = await run(options);
      expect(existsSync(`${out}/secret.key`)).toBe(true);
      expect(rows).toHaveLength(small.rounds);
      rows.forEach((row, i) => {
        expect(Math.abs((row.test_accuracy as number) - (plain[i]!.test_accuracy as number)), `${algorithm} round ${i + 1}`).toBeLessThan(0.01);
        expect(row.epsilon).toBeNull();
        expect(row.train_loss).toBeNull();
      });
    }
  }, deadline(300_000));

  test("MimeLite trains with it; its epsilon is for its delta and gradient in one tree, twice the parameters", async () => {
    // 16 bits: a noise table of thousands of entries, not of a million (seconds to build).
    const options = { algorithm: "mimelite", aggregator: "distributed-dp", ddpClip: 1, ddpNoise: 1, ddpBits: 16, minClients: 5 };
    const { rows } = await run(options);
    const config = validateRunConfig({ ...small, out: "unused", ...options }, "test");
    expect(distributedDpEpsilonAfter(config, 3, 2 * 7850)).not.toBe(distributedDpEpsilonAfter(config, 3, 7850));
    rows.forEach((row, i) => {
      expect(Number.isFinite(row.test_accuracy)).toBe(true);
      expect(row.epsilon).toBe(distributedDpEpsilonAfter(config, i + 1, 2 * 7850));
    });
  }, deadline(300_000));

  test("a row's epsilon is the accountant's for the run's calibration: the model's parameters padded to a power of two", () => {
    const config = validateRunConfig({ ...small, out: "unused", aggregator: "distributed-dp", ddpClip: 0.5, ddpNoise: 1.2, ddpBits: 18, minClients: 4, ddpDelta: 1e-6 }, "test");
    const cal = calibrateDistributedDp({ clip: 0.5, noiseMultiplier: 1.2, bits: 18, minClients: 4, maxClients: 5, dimension: 8192 });
    expect(hadamardLength(7850)).toBe(8192);
    // PLD by default (src/lib/privacy/distributed-dp-pld.ts), RDP with --accountant rdp.
    for (const rounds of [1, 10]) expect(distributedDpEpsilonAfter(config, rounds, 7850)).toBe(distributedDpPldEpsilon(cal, rounds, 1e-6));
    expect(distributedDpEpsilonAfter({ ...config, accountant: "rdp" }, 10, 7850)).toBe(distributedDpEpsilon(cal, 10, 1e-6).epsilon);
    expect(distributedDpEpsilonAfter(config, 10, 7850)).toBeGreaterThan(distributedDpEpsilonAfter(config, 1, 7850));
    // --ddp-target-epsilon: the noise that spends it in --rounds rounds.
    const targeted = validateRunConfig({ ...small, out: "unused", aggregator: "distributed-dp", ddpClip: 0.5, ddpBits: 18, minClients: 4, ddpTargetEpsilon: 6 }, "test");
    expect(distributedDpEpsilonAfter(targeted, small.rounds, 7850)).toBeLessThanOrEqual(6);
    expect(distributedDpEpsilonAfter(targeted, small.rounds, 7850)).toBeGreaterThan(5.99);
    expect(distributedDpOptionsOf(targeted, 7850).noiseMultiplier).toBeGreaterThan(0.5);
  });

  test("the clients' keys: one per round and client, from the run's secret only", () => {
    const secret = RunSecret.generate();
    const keys = [1, 2].flatMap((round) => [0, 1, 2].map((client) => secret.clientKey(round, client).join()));
    expect(new Set(keys).size).toBe(6);
    expect(secret.clientKey(2, 1)).toEqual(secret.clientKey(2, 1));
    expect(RunSecret.generate().clientKey(2, 1)).not.toEqual(secret.clientKey(2, 1));
  });

  test("bad options are FT305", () => {
    const invalid = (options: Record<string, unknown>) => () => validateRunConfig({ ...small, out: "unused", ...options }, "test");
    expect(invalid({ aggregator: "distributed-dp", ddpBits: 31 })).toThrow(/^FT305: /);
    expect(invalid({ aggregator: "distributed-dp", algorithm: "mime" })).toThrow(/--algorithm mime cannot take --aggregator distributed-dp: Mime aggregates .* two releases a round/);
    expect(invalid({ aggregator: "distributed-dp", algorithm: "afl" })).toThrow(/--algorithm afl cannot take --aggregator distributed-dp: AFL's ascent/);
    expect(invalid({ aggregator: "clip,distributed-dp" })).toThrow(/distributed-dp clips each client's whole update .* \(FT326\)/);
    expect(invalid({ aggregator: "distributed-dp", quantizeBits: 4 })).toThrow(/aggregator distributed-dp: distributed-dp rotates and rounds each update itself/);
    expect(invalid({ aggregator: "distributed-dp,secure" })).toThrow(/distributed-dp is itself the secure sum and its noise/);
    expect(invalid({ ddpNoise: 2 })).toThrow(/^FT305: /);
  });
});
