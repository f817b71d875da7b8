/**
 * --resume against a folder that is not what it seems, each made for real with the CLI and
 * file copies: another run's valid checkpoint under this run's checkpoint name (FT304, and
 * the metrics untouched), metrics rows after the resumed round (set aside, never deleted),
 * and a run killed with SIGKILL before its first checkpoint (resumed from round 0).
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { checkpointFileName } from "../../src/lib/run/checkpoint.js";
import { cli, inProcessCli, metricsRows, runCli, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

/**
 * A small run: 4 rounds and a checkpoint each round, unless `extra` says otherwise. On the
 * synthetic set: the guards read checkpoints and metrics, whatever the data, and none of the
 * file's runs reads MNIST.
 */
const args = (out: string, seed: number, ...extra: string[]) => [
  "run", "--model", "logistic", "--dataset", "synthetic", "--clients", "20", "--clients-per-round", "3", "--batch-size", "100", "--seed", String(seed), "--out", out,
  ...(extra.includes("--rounds") ? [] : ["--rounds", "4"]), ...(extra.includes("--checkpoint-every") ? [] : ["--checkpoint-every", "1"]), ...extra,
];

/** Runs to the end; fails the test otherwise. */
function completed(out: string, seed: number, ...extra: string[]): string {
  const run = runCli(args(out, seed, ...extra), 120_000);
  expect(run.status, run.stderr).toBe(0);
  return out;
}

const withoutTimes = (out: string) => metricsRows(out).map(({ seconds: _seconds, ...row }) => row);

describe("another run's checkpoint under this run's name", () => {
  let seed7: string;
  let seed11: string;
  beforeAll(() => {
    seed7 = completed(tempDir("ft-guard-7-"), 7);
    seed11 = completed(tempDir("ft-guard-11-"), 11);
  }, deadline(240_000));

  /** seed 11's folder with one of seed 7's checkpoint files copied over one of its own. */
  function swapped(prefix: string, from: number, over: number, keep?: string): string {
    const out = tempDir(prefix);
    for (const name of readdirSync(keep ?? seed11)) copyFileSync(join(keep ?? seed11, name), join(out, name));
    copyFileSync(join(seed7, checkpointFileName(from)), join(out, checkpointFileName(over)));
    return out;
  }

  /** The refusal comes before any data is read: through the CLI's main in this process, no process start-up. */
  async function refused(out: string, message: RegExp): Promise<void> {
    const before = readFileSync(join(out, "metrics.jsonl"), "utf8");
    const run = await inProcessCli(args(out, 11, "--resume", "--rounds", "6"));
    expect(run.status, run.output).toBe(1);
    expect(run.output).toMatch(message);
    expect(run.output).not.toMatch(stackLine);
    // Nothing of the run's history is touched.
    expect(readFileSync(join(out, "metrics.jsonl"), "utf8")).toBe(before);
    expect(metricsRows(out).map((row) => row.round)).toEqual([1, 2, 3, 4]);
  }

  test("a round-2 checkpoint named for round 4: FT304, the round inside against the name", async () => {
    const out = swapped("ft-guard-round-", 2, 4);
    await refused(out, new RegExp(`FT304: ${join(out, checkpointFileName(4))}: holds the state after round 2, not round 4 as its name says.*--overwrite`));
  }, deadline(120_000));

  test("another seed's round-4 checkpoint: FT304 naming the checkpoint it disagrees with", async () => {
    const out = swapped("ft-guard-config-", 4, 4);
    const other = join(out, checkpointFileName(2)).replace(/[.]/g, "\\.");
    await refused(out, new RegExp(`FT304: .*${checkpointFileName(4)}: its config differs from that of ${other}: --seed 7 against 11: it is not this run's checkpoint`));
  }, deadline(120_000));

  test("with one checkpoint kept, the metrics row of its round tells them apart", async () => {
    const lone11 = completed(tempDir("ft-guard-lone-"), 11, "--keep-checkpoints", "1");
    const out = swapped("ft-guard-row-", 4, 4, lone11);
    expect(readdirSync(out).filter((name) => name.startsWith("checkpoint-"))).toEqual([checkpointFileName(4)]);
    await refused(out, new RegExp(`FT304: .*${checkpointFileName(4)}: its round 4 is \\{"round":4,.*but ${join(out, "metrics.jsonl").replace(/[.]/g, "\\.")} has \\{"round":4,`));
  }, deadline(120_000));

  test("rows after the resumed round are set aside, not deleted, and trained again to the same values", () => {
    const out = tempDir("ft-guard-aside-");
    for (const name of readdirSync(seed11)) copyFileSync(join(seed11, name), join(out, name));
    const original = readFileSync(join(out, "metrics.jsonl"), "utf8").split("\n");
    // As if killed after round 4's row but before its checkpoint.
    rmSync(join(out, checkpointFileName(4)));
    const run = runCli(args(out, 11, "--resume"), 120_000);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`the metrics row of round 4, after round 3, is set aside in ${join(out, "metrics.jsonl.superseded-1")}`);
    expect(readFileSync(join(out, "metrics.jsonl.superseded-1"), "utf8")).toBe(`${original[3]}\n`);
    expect(withoutTimes(out)).toEqual(withoutTimes(seed11));
    // --overwrite clears the set-aside rows with the rest of the run's files.
    expect(runCli(args(out, 11, "--overwrite"), 120_000).status).toBe(0);
    expect(existsSync(join(out, "metrics.jsonl.superseded-1"))).toBe(false);
  }, deadline(120_000));
});

describe("a run killed before its first checkpoint", () => {
  test("--resume starts it from round 0; the plain rerun and a folder with no checkpoint both name --overwrite", async () => {
    const out = tempDir("ft-guard-early-");
    // Checkpoints only at the end of 500 rounds: killed once two rows are on disk, it has none but round 0's.
    const child = spawn(process.execPath, [cli, ...args(out, 5, "--rounds", "500", "--checkpoint-every", "0")], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    await new Promise<void>((resolve, reject) => {
      // Each progress line comes after its row was written and fsynced.
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (metricsRows(out).length >= 2) resolve();
      });
      void exited.then(() => reject(new Error(`ended before it was killed: ${output}`)));
    });
    child.kill("SIGKILL");
    await exited;
    expect(readdirSync(out).filter((name) => name.startsWith("checkpoint-"))).toEqual([checkpointFileName(0)]);
    const early = metricsRows(out).length;
    expect(early).toBeGreaterThanOrEqual(2);

    const rerun = await inProcessCli(args(out, 5));
    expect(rerun.status).toBe(2);
    expect(rerun.output).toMatch(/FT305: --out: .* holds another run .*give --resume to continue it or --overwrite to replace it/);

    const resumed = runCli(args(out, 5, "--resume", "--rounds", "3"), 120_000);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`resumed from round 0 (${join(out, checkpointFileName(0))})`);
    expect(resumed.stdout).toMatch(/the metrics rows? of rounds? [\d-]+, after round 0, (is|are) set aside in /);
    expect(resumed.stdout).toContain(`set aside in ${join(out, "metrics.jsonl.superseded-1")}`);
    expect(readdirSync(out)).not.toContain(checkpointFileName(0));
    expect(withoutTimes(out)).toEqual(withoutTimes(completed(tempDir("ft-guard-straight-"), 5, "--rounds", "3")));

    // A folder whose checkpoints are all gone: both ways forward are named.
    for (const name of readdirSync(out)) if (name.startsWith("checkpoint-")) rmSync(join(out, name));
    const none = await inProcessCli(args(out, 5, "--resume"));
    expect(none.status).toBe(1);
    expect(none.output).toContain(`FT304: ${out}: --resume found no checkpoint there; run without --resume to start it, adding --overwrite if the folder holds another run's files`);
  }, deadline(240_000));
});
