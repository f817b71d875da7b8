/**
 * A --batch-size larger than the clients hold (issue 34, item 5): 10,000 MNIST clients hold 6
 * training examples each, fewer than the default batch of 10. A client's batch is at most its
 * own examples, so the run trains, says once that batches hold at most 6, and computes exactly
 * what --batch-size 6 computes. Run for real with the CLI.
 */
import { describe, expect, test } from "vitest";
import { deadline } from "../helpers/deadline.js";
import { metricsRows, runCli } from "./cli.js";
import { tempDir } from "./temp-dir.js";

const notice = "--batch-size 10 is more than the 6 training examples of the largest client: a client's batch is at most its own examples, so batches hold at most 6";

const withoutTimes = (out: string) => metricsRows(out).map(({ seconds: _seconds, ...row }) => row);

describe("a batch larger than every client", () => {
  test("run --clients 10000 --clients-per-round 10000 --rounds 1 --model logistic trains by default and says so once", () => {
    const out = tempDir("ft-clamp-all-");
    const run = runCli(["run", "--clients", "10000", "--clients-per-round", "10000", "--rounds", "1", "--model", "logistic", "--out", out], 300_000);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.split(notice)).toHaveLength(2);
    expect(metricsRows(out).map((row) => row.round)).toEqual([1]);
  }, deadline(300_000));

  test("the clamped run computes what --batch-size 6 computes, bit for bit", () => {
    const args = (out: string, ...extra: string[]) => ["run", "--clients", "10000", "--clients-per-round", "50", "--rounds", "2", "--model", "logistic", "--seed", "4", "--out", out, ...extra];
    const [clamped, six] = [tempDir("ft-clamp-10-"), tempDir("ft-clamp-6-")];
    const first = runCli(args(clamped), 180_000);
    expect(first.status, first.stderr).toBe(0);
    const second = runCli(args(six, "--batch-size", "6"), 180_000);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).not.toContain("--batch-size");
    expect(withoutTimes(clamped)).toEqual(withoutTimes(six));
  }, deadline(360_000));
});
