/**
 * `fedtensor run` with a robust aggregator, simulated attackers and quantized updates: the
 * metrics rows count the attackers and the bits each client sends, the attackers are the
 * seed's choice, rounds of the median, trimmed mean and Krum that cannot hold the whole cohort
 * are FT322 while norm-clip, attacks and quantization stream, and options that do not go
 * together are FT305.
 */
import { describe, expect, test } from "vitest";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { maliciousClients, requireWholeCohort } from "../../src/lib/run/robust.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 5, batchSize: 100, checkpointEvery: 0 } as const;
const config = (options: Record<string, unknown>) => validateRunConfig({ ...small, out: tempDir("ft-robust-"), ...options }, "test");

async function robustRun(options: Record<string, unknown>) {
  const lines: string[] = [];
  const cfg = config(options);
  const result = await train(cfg, { write: (s: string) => lines.push(s) > 0, isTTY: false });
  return { result, rows: readMetrics(`${cfg.out}/metrics.jsonl`), log: lines.join("") };
}

describe("fedtensor run with robust aggregation", () => {
  test("Krum under a sign-flip attack on quantized updates: attackers and bits sent in every row", async () => {
    const { rows, log, result } = await robustRun({ rounds: 2, aggregator: "krum", krumByzantine: 1, attack: "sign-flip", byzantine: 0.2, quantizeBits: 4 });
    // Logistic regression: 784 x 10 weights and 10 biases, two leaves.
    const bits = 7850 * 4 + 2 * 64;
    expect(rows.map((row) => [row.byzantine_clients, row.bits_per_client])).toEqual([[1, bits], [1, bits]]);
    expect(rows[0]!.compression).toBeCloseTo((32 * 7850) / bits, 10);
    expect(log).toContain(`updates quantized to 4 bits: ${bits} bits per client per round instead of ${32 * 7850} as float32 (7.97x less)`);
    expect(result.accuracy).toBeGreaterThan(0.5);
  }, deadline(120_000));

  test("a resumed run under a noise attack with quantized updates repeats an uninterrupted one exactly", async () => {
    const options = { aggregator: "trimmed-mean", trimFraction: 0.2, attack: "noise", byzantine: 0.2, attackScale: 0.5, quantizeBits: 3, checkpointEvery: 1 };
    const straight = (await robustRun({ ...options, rounds: 3 })).rows;
    const stream = { write: () => true, isTTY: false };
    const out = tempDir("ft-robust-resume-");
    await train(validateRunConfig({ ...small, ...options, rounds: 2, out }, "test"), stream);
    await train(validateRunConfig({ ...small, ...options, rounds: 3, out, resume: true }, "test"), stream, { given: ["rounds", "resume"] });
    const resumed = readMetrics(`${out}/metrics.jsonl`);
    expect(resumed.map(({ seconds: _, ...row }) => row)).toEqual(straight.map(({ seconds: _, ...row }) => row));
  }, deadline(120_000));

  test("the attackers are round(F C) clients of the cohort, the same for the same seed and round", () => {
    const cohort = Int32Array.from([4, 9, 11, 15, 2, 7, 8, 1, 0, 3]);
    const cfg = config({ attack: "noise", byzantine: 0.2, seed: 5 });
    const picked = maliciousClients(cfg, 3, cohort);
    expect(picked.size).toBe(2);
    for (const client of picked) expect(cohort).toContain(client);
    expect(maliciousClients(cfg, 3, cohort)).toEqual(picked);
    const rounds = Array.from({ length: 8 }, (_, r) => [...maliciousClients(cfg, r + 1, cohort)].sort().join());
    expect(new Set(rounds).size).toBeGreaterThan(1);
    expect(maliciousClients(config({ seed: 5 }), 3, cohort).size).toBe(0);
  });

  test("a round streamed in chunks smaller than the cohort is FT322, not a silent whole-cohort round", async () => {
    await expect(robustRun({ rounds: 1, aggregator: "median", chunkClients: 2 })).rejects.toThrow(
      "FT322: --aggregator median needs every client's update at once: --chunk-clients 2 is smaller than the cohort of 5; give --chunk-clients 5 or more",
    );
  }, deadline(60_000));

  test("norm-clip under a sign-flip attack on quantized updates streams: chunks of 2 train as one chunk does", async () => {
    const options = { rounds: 2, aggregator: "norm-clip", normBound: 1, attack: "sign-flip", byzantine: 0.4, quantizeBits: 4 };
    const [whole, chunked] = [await robustRun(options), await robustRun({ ...options, chunkClients: 2 })];
    expect(chunked.rows.map((row) => row.byzantine_clients)).toEqual([2, 2]);
    // The same clients, attackers and quantization keys; only the order of the sums differs.
    chunked.rows.forEach((row, i) => expect(row.test_loss as number).toBeCloseTo(whole.rows[i]!.test_loss as number, 4));
  }, deadline(120_000));

  test("a round given to workers (--engine) is FT322: each worker would see one chunk", () => {
    const cfg = config({ aggregator: "krum", engine: "redis://127.0.0.1:1" });
    expect(() => requireWholeCohort(cfg, 5, true)).toThrow(
      "FT322: --aggregator krum needs every client's update at once: --engine redis://127.0.0.1:1 gives each worker a chunk of the cohort; run without --engine",
    );
  });

  test("options that do not go together are FT305; chains that cannot work say why (FT326)", () => {
    // Composition made the old "goes with --algorithm fedavg" rules obsolete: these run now.
    expect(config({ aggregator: "median", algorithm: "fedprox" }).aggregator).toBe("median");
    expect(config({ aggregator: "dp", quantizeBits: 8 }).quantizeBits).toBe(8);
    expect(() => config({ byzantine: 0.1 })).toThrow(/FT305.*applies only with --attack sign-flip \| scale \| noise, not none/);
    expect(() => config({ aggregator: "median", trimFraction: 0.2 })).toThrow(/FT305.*applies only with --aggregator a chain with trimmed-mean/);
    expect(() => config({ aggregator: "secure,median" })).toThrow(/FT305.*median needs each client's value, and secure aggregation shows the server only the sum of masked values \(FT326\)/);
    expect(() => config({ aggregator: "clip,quantize,dp", quantizeBits: 8 })).toThrow(/FT305.*quantize after clip changes the clipped norm dp's noise is calibrated to/);
  });

  test("Krum with more Byzantine clients than the cohort tolerates is FT321", async () => {
    await expect(robustRun({ rounds: 1, aggregator: "krum", krumByzantine: 2 })).rejects.toThrow(/FT321: krum: Krum tolerates f Byzantine clients among C only when C > 2f \+ 2; got f = 2 of C = 5 clients/);
  }, deadline(60_000));
});
