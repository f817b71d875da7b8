/**
 * `fedtensor run --aggregator secure`: FedAvg whose weighted updates and weights are summed
 * with secureSum. It trains as plain FedAvg does (the same clients and batches, sums exact up
 * to a quantization below 1e-7), streams in secure groups (one a chunk), and its options are
 * checked.
 */
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const small = { model: "logistic", clients: 20, clientsPerRound: 5, batchSize: 100, checkpointEvery: 0, rounds: 3 } as const;

async function run(options: Record<string, unknown>) {
  const out = tempDir("ft-secure-");
  await train(validateRunConfig({ ...small, out, ...options }, "test"), { write: () => true, isTTY: false });
  return readMetrics(`${out}/metrics.jsonl`);
}

describe("fedtensor run --aggregator secure", () => {
  test("trains as plain FedAvg does, also with a SecAgg+ mask graph and with chunks asked for", async () => {
    const plain = await run({});
    for (const secure of [await run({ aggregator: "secure" }), await run({ aggregator: "secure", secureNeighbours: 2, secureBits: 24, chunkClients: 2 })]) {
      expect(secure).toHaveLength(3);
      secure.forEach((row, i) => {
        expect(row.test_loss as number).toBeCloseTo(plain[i]!.test_loss as number, 3);
        expect(Math.abs((row.test_accuracy as number) - (plain[i]!.test_accuracy as number))).toBeLessThan(0.005);
      });
    }
  }, deadline(180_000));

  test("bad secure options are FT305", () => {
    const invalid = (options: Record<string, unknown>) => {
      try {
        validateRunConfig({ ...small, out: "unused", ...options }, "test");
      } catch (error) {
        expect(error).toBeInstanceOf(FedTensorError);
        return (error as Error).message;
      }
      throw new Error("expected FT305");
    };
    expect(invalid({ aggregator: "secure", secureBits: 31 })).toMatch(/^FT305: /);
    expect(invalid({ aggregator: "secure", secureNeighbours: 3 })).toMatch(/give an even number, not 3/);
    // Any algorithm takes the secure stage now; q-FFL's loss-derived weights cannot go through it.
    expect(validateRunConfig({ ...small, out: "unused", aggregator: "secure", algorithm: "fedprox" }, "test").algorithm).toBe("fedprox");
    expect(invalid({ aggregator: "secure", algorithm: "qffl" })).toMatch(/--algorithm qffl cannot take --aggregator secure: q-FFL weighs each client's step/);
    expect(invalid({ aggregator: "secure", secureGroupMin: 6 })).toMatch(/a secure group of 6 clients needs a cohort at least that large, not --clients-per-round 5/);
    expect(invalid({ secureClip: 2 })).toMatch(/^FT305: /);
  });
});
