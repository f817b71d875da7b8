/**
 * The training loop of `fedtensor run`: a round whose update is not finite is rejected with
 * FT303 before it replaces anything (metrics and the last checkpoint on disk are those of the
 * last good round), the last round is evaluated whatever --eval-every, and every program of a
 * run runs on the configured backend.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/index.js";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { train } from "../../src/lib/run/train.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const quiet = { write: () => true, isTTY: false };

/** Logistic regression on 20 MNIST clients, 6 rounds, in a fresh folder. */
const smallConfig = (prefix: string, settings: Record<string, unknown>) =>
  validateRunConfig({ model: "logistic", clients: 20, clientsPerRound: 3, batchSize: 100, rounds: 6, out: tempDir(prefix), ...settings }, "test");

describe("non-finite updates", () => {
  test("an exploding learning rate stops the run with FT303 and leaves the last good state", async () => {
    const config = smallConfig("ft-nonfinite-", { lr: 1e38, checkpointEvery: 1, evalEvery: 1 });
    const { out } = config;
    let error: unknown;
    try {
      await train(config, quiet);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FedTensorError);
    const ft = error as FedTensorError;
    expect(ft.code).toBe("FT303");
    const round = Number(ft.params.round);
    expect(ft.message).toMatch(new RegExp(`^FT303: round ${round}: the update of params\\.\\w+ is not finite; the server state was left unchanged$`));
    // Rounds before the bad one completed: their metrics and checkpoints are there, finite.
    const rows = readMetrics(`${out}/metrics.jsonl`);
    expect(rows.map((r) => r.round)).toEqual(Array.from({ length: round - 1 }, (_, i) => i + 1));
    // Round 0's checkpoint (the initial state) when the first round was the bad one.
    const latest = await loadLatestCheckpoint(out);
    expect(latest!.checkpoint.round).toBe(round - 1);
    const params = (latest!.checkpoint.serverState as unknown as { params: Record<string, { data: Float32Array }> }).params;
    for (const leaf of Object.values(params)) expect(leaf.data.every(Number.isFinite)).toBe(true);
  }, deadline(60_000));
});

describe("a metric that is not finite", () => {
  test("a huge server lr is FT303 on the training loss; the last good round is saved as a checkpoint, with the plot", async () => {
    // Checkpoints only at the end, evaluation never before it: nothing is on disk when round 2 diverges.
    const config = smallConfig("ft-nan-metric-", { serverLr: 1e37, checkpointEvery: 0, evalEvery: 100 });
    const { out } = config;
    const lines: string[] = [];
    const error = await train(config, { write: (chunk: string) => lines.push(chunk), isTTY: false }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(FedTensorError);
    expect((error as FedTensorError).message).toBe("FT303: round 2: the training loss (Infinity) is not finite; the server state was left unchanged");
    const latest = await loadLatestCheckpoint(out);
    expect(latest!.checkpoint.round).toBe(1);
    expect(lines.join("")).toContain(`kept the last good state, round 1 (${latest!.path}), and the plot of rounds 1-1`);
    expect(readMetrics(`${out}/metrics.jsonl`).map((row) => row.round)).toEqual([1]);
    expect(readFileSync(`${out}/plot.svg`, "utf8")).toContain("<svg");
    expect(existsSync(`${out}/plot.png`)).toBe(true);
  }, deadline(60_000));
});

describe("evaluation on a run shorter than --eval-every", () => {
  test("the last round is evaluated and a line says so; the plot has test-loss and caption; a resumed run evaluates its new last round", async () => {
    const config = smallConfig("ft-short-", { rounds: 3, evalEvery: 5, checkpointEvery: 0 });
    const lines: string[] = [];
    const result = await train(config, { write: (chunk: string) => lines.push(chunk) > 0, isTTY: false });
    expect(lines.join("")).toContain("--eval-every 5 is more than the run's 3 rounds: the test set is evaluated at the last round only");
    const rows = readMetrics(`${config.out}/metrics.jsonl`);
    expect(Object.keys(rows[0]!)).toEqual(["round", "train_loss", "clients", "test_accuracy", "test_loss", "seconds"]);
    expect(rows.map((row) => [row.test_accuracy === null, row.test_loss === null])).toEqual([[true, true], [true, true], [false, false]]);
    expect(rows[2]!.test_accuracy).toBe(result.accuracy);
    expect(rows[2]!.test_loss as number).toBeGreaterThan(0);
    const svg = readFileSync(`${config.out}/plot.svg`, "utf8");
    for (const text of ["Test accuracy", "Test loss", "Training loss"]) expect(svg).toContain(`>${text}</text>`);
    // The caption, one tspan a line, under the title.
    expect(svg).toContain(">3 of 20 clients per round · IID clients · 1 local epoch · batch 100 · lr 0.1</tspan>");
    expect(svg).toContain(">weighted-mean aggregation · test set evaluated at the last round only (--eval-every 5)</tspan>");

    // Resumed to round 7: rounds 5 and 7 (the new last) are evaluated, round 3's row stays as it was, and no short-run line.
    const resumedLines: string[] = [];
    await train({ ...config, rounds: 7, resume: true }, { write: (chunk: string) => resumedLines.push(chunk) > 0, isTTY: false });
    expect(resumedLines.join("")).not.toContain("is more than the run's");
    const resumed = readMetrics(`${config.out}/metrics.jsonl`);
    expect(resumed.filter((row) => row.test_accuracy !== null).map((row) => row.round)).toEqual([3, 5, 7]);
    expect(resumed[2]).toEqual(rows[2]);
    expect(readFileSync(`${config.out}/plot.svg`, "utf8")).toContain("test set evaluated every 5 rounds and at the last");
  }, deadline(120_000));
});

describe("the run's backend", () => {
  test("every program of a run runs on the configured backend", async () => {
    const tf = await import("@tensorflow/tfjs");
    const config = validateRunConfig({ model: "logistic", clients: 10, clientsPerRound: 2, batchSize: 200, rounds: 1, backend: "wasm", checkpointEvery: 0, out: tempDir("ft-backend-") }, "test");
    const result = await train(config, quiet);
    expect(result.accuracy).toBeGreaterThan(0.5);
    expect(tf.getBackend()).toBe("wasm");
  }, deadline(60_000));
});

describe("streamed rounds", () => {
  // Streamed against whole rounds: test/run/streaming.test.ts. Here the whole loop, end to end.
  test("a run whose cohort streams (Dirichlet clients, several size buckets) gives the same metrics in chunks of 3 as of 100", async () => {
    const run = async (chunkClients: number) => {
      const out = tempDir("ft-stream-");
      const config = validateRunConfig({ model: "logistic", partition: "dirichlet", clients: 40, clientsPerRound: 12, chunkClients, batchSize: 50, rounds: 2, checkpointEvery: 0, out }, "test");
      await train(config, quiet);
      return readMetrics(`${out}/metrics.jsonl`);
    };
    // In chunks of 100 the 12 clients still fall in several size buckets: that run streams too.
    const [small, large] = [await run(3), await run(100)];
    expect(small.map((r) => r.round)).toEqual([1, 2]);
    small.forEach((row, i) => {
      expect(row.train_loss).toBeCloseTo(large[i]!.train_loss as number, 5);
      expect(row.test_accuracy).toBeCloseTo(large[i]!.test_accuracy as number, 3);
    });
  }, deadline(120_000));
});
