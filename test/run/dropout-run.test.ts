/**
 * `fedtensor run --dropout p --min-clients k`: clients drop out reproducibly, a round with
 * fewer survivors than k is skipped (the model unchanged) and logged in the metrics.
 */
import { describe, expect, test } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadRunConfig, validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

describe("a run with dropout", () => {
  test("logs survivors and drops per round, skips rounds short of --min-clients, and repeats exactly", async () => {
    const lines: string[] = [];
    const stream = { write: (s: string) => lines.push(s) > 0, isTTY: false };
    const run = async (out: string) => {
      const config = validateRunConfig({ model: "logistic", clients: 20, clientsPerRound: 3, dropout: 0.5, minClients: 2, batchSize: 100, rounds: 8, checkpointEvery: 0, out }, "test");
      await train(config, stream);
      return readMetrics(`${out}/metrics.jsonl`);
    };
    const rows = await run(tempDir("ft-dropout-"));
    for (const row of rows) {
      // A round with fewer than 2 survivors trained nothing: no training loss, no client aggregated.
      const survivors = 3 - Number(row.dropped);
      expect(row.train_loss === null).toBe(survivors < 2);
      expect(row.clients).toBe(survivors < 2 ? 0 : survivors);
    }
    const skipped = rows.filter((row) => row.train_loss === null);
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped.length).toBeLessThan(rows.length);
    expect(lines.join("")).toContain(`round ${skipped[0]!.round} skipped: ${3 - Number(skipped[0]!.dropped)} of 3 clients reported, fewer than --min-clients 2`);
    const again = await run(tempDir("ft-dropout-"));
    expect(again.map(({ seconds: _, ...row }) => row)).toEqual(rows.map(({ seconds: _, ...row }) => row));
  }, deadline(120_000));

  test("--min-clients above --clients-per-round is FT305", async () => {
    await expect(loadRunConfig(["--min-clients", "11"])).rejects.toThrow(
      "FT305: --min-clients: 11 surviving clients can never come from 10 sampled per round (--clients-per-round)",
    );
    await expect(loadRunConfig(["--dropout", "1"])).rejects.toThrow("FT305: --dropout: expected number 0 <= x < 1, got 1");
  });

  test.each(["iid", "shards", "dirichlet"])("--clients larger than the examples is FT305 with --partition %s", async (partition) => {
    const errors: string[] = [];
    const original = console.error;
    console.error = (message: string) => errors.push(message);
    try {
      const status = await main(["run", "--clients", "70000", "--partition", partition, "--rounds", "1", "--out", tempDir("ft-clients-")]);
      expect(status).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors.join("\n")).toMatch(/FT305: --clients: 70000 clients, each needing .* exceed the 60000 training examples of mnist/);
  });
});
