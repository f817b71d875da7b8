/**
 * --resume over a run whose metrics.jsonl was damaged after its checkpoints were written
 * (issue 34, items 2-4): each is FT304 naming the metrics file (and the line), before any
 * round trains, and neither metrics file is touched. Made for real: a run of 5 rounds with
 * the CLI, its folder copied and damaged, then resumed for a sixth round.
 */
import { copyFileSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { checkMetricsToResume } from "../../src/lib/run/metrics-check.js";
import { deadline } from "../helpers/deadline.js";
import { inProcessCli, runCli, smallRun, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";

/** smallRun on the synthetic set (the claims are about the metrics files, whatever the data: no MNIST read). */
const options = (out: string, ...extra: string[]) => smallRun(out, "--dataset", "synthetic", "--seed", "3", ...extra);
const run = (out: string, ...extra: string[]) => runCli(options(out, ...extra), 120_000);

let finished: string;
beforeAll(() => {
  finished = tempDir("ft-resume-metrics-");
  const done = run(finished, "--rounds", "5");
  expect(done.status, done.stderr).toBe(0);
}, deadline(240_000));

/** A copy of the finished run's folder, damaged by `damage`. */
function damaged(prefix: string, damage: (jsonl: string) => void): string {
  const out = tempDir(prefix);
  for (const name of readdirSync(finished)) copyFileSync(join(finished, name), join(out, name));
  damage(join(out, "metrics.jsonl"));
  return out;
}

/**
 * `fedtensor run` resuming `out` for a sixth round, through the CLI's main in this process (the
 * refusal comes before any data is read: no process start-up): its status, what
 * it printed to stderr, and to stdout with the round lines it writes to process.stdout.
 */
async function resumeInProcess(out: string): Promise<{ status: number; stdout: string; stderr: string }> {
  const rounds: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array) => (rounds.push(String(chunk)), true)) as typeof write;
  try {
    const { status, stdout, stderr } = await inProcessCli(options(out, "--resume", "--rounds", "6"));
    return { status, stdout: stdout + rounds.join(""), stderr };
  } finally {
    process.stdout.write = write;
  }
}

/** Resuming `out` for a sixth round is FT304 matching `message`, with no stack, and no metrics file changed. */
async function refused(out: string, message: RegExp): Promise<void> {
  const files = ["metrics.jsonl", "metrics.csv"].map((name) => readdirSync(out).includes(name) ? readFileSync(join(out, name), "utf8") : undefined);
  const resumed = await resumeInProcess(out);
  expect(resumed.status, resumed.stdout).toBe(1);
  expect(resumed.stderr).toMatch(message);
  expect(resumed.stderr).not.toMatch(stackLine);
  expect(resumed.stdout).not.toContain("round 6/6");
  expect(["metrics.jsonl", "metrics.csv"].map((name) => readdirSync(out).includes(name) ? readFileSync(join(out, name), "utf8") : undefined)).toEqual(files);
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("a damaged metrics.jsonl on --resume", () => {
  test("missing: FT304 naming it, and metrics.csv keeps rounds 1-5 (it lost them to round 6 before)", async () => {
    const out = damaged("ft-resume-missing-", (jsonl) => rmSync(jsonl));
    await refused(out, new RegExp(`^fedtensor run: FT304: ${escaped(join(out, "metrics.jsonl"))}: is missing, but the checkpoint to resume is of round 5: resuming would lose the rows of rounds 1-5 \\(${escaped(join(out, "metrics.csv"))} is rebuilt from it`, "m"));
    expect(readFileSync(join(out, "metrics.csv"), "utf8").trim().split("\r\n")).toHaveLength(6);
  }, deadline(120_000));

  test("a column name flipped in line 1: FT304 naming the file and line 1, before round 6 trains", async () => {
    const out = damaged("ft-resume-column-", (jsonl) => writeFileSync(jsonl, readFileSync(jsonl, "utf8").replace('"train_loss"', '"train_lors"')));
    await refused(out, new RegExp(`^fedtensor run: FT304: ${escaped(join(out, "metrics.jsonl"))}: line 1 \\(round 1\\) has column train_lors where the run has none and no column train_loss`, "m"));
  }, deadline(120_000));

  test("the last row torn off (truncate -s -20): FT304 naming the metrics file, not blaming the checkpoint", async () => {
    const out = damaged("ft-resume-torn-", (jsonl) => truncateSync(jsonl, readFileSync(jsonl).length - 20));
    await refused(out, new RegExp(`^fedtensor run: FT304: ${escaped(join(out, "metrics.jsonl"))}: ends at round 4 \\(line 4\\), and its line 5 is cut short, before round 5 of the checkpoint to resume`, "m"));
  }, deadline(120_000));

  test("emptied: FT304 naming the metrics file", async () => {
    const out = damaged("ft-resume-empty-", (jsonl) => writeFileSync(jsonl, ""));
    await refused(out, new RegExp(`^fedtensor run: FT304: ${escaped(join(out, "metrics.jsonl"))}: has no whole row, before round 5`, "m"));
  }, deadline(120_000));
});

describe("checkMetricsToResume", () => {
  test("a run killed before its metrics files were made resumes from round 0 with no rows", () => {
    expect(checkMetricsToResume(tempDir("ft-resume-round0-"), 0, undefined)).toEqual([]);
  });

  test("a torn last row after the checkpoint's round is a kill mid-append, not damage", () => {
    const dir = tempDir("ft-resume-kill-");
    writeFileSync(join(dir, "metrics.jsonl"), '{"round":1,"loss":1}\n{"round":2,"loss":0.5}\n{"round":3,"lo');
    expect(checkMetricsToResume(dir, 2, { round: 2, loss: 0.5 })).toEqual([{ round: 1, loss: 1 }, { round: 2, loss: 0.5 }]);
  });
});
