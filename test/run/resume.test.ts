/**
 * `fedtensor run --resume` after a SIGKILL: the run continues from its last checkpoint, loses
 * at most the round in progress, and ends exactly where an uninterrupted run ends (each
 * round's randomness comes from the seed and the round number, and checkpoints hold the exact
 * float32 state).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { inProcessCli } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const cli = join(root, "bin/fedtensor.js");
/** On the synthetic set: the claim holds for any data, and none of the runs reads MNIST. */
const options = (out: string) => [
  "run", "--model", "logistic", "--dataset", "synthetic", "--clients", "20", "--clients-per-round", "3", "--batch-size", "100",
  "--rounds", "8", "--checkpoint-every", "1", "--eval-every", "4", "--seed", "3", "--out", out,
];

const rowsOf = (out: string) => (existsSync(join(out, "metrics.jsonl")) ? readMetrics(join(out, "metrics.jsonl")) : []);

/** Starts a run and SIGKILLs it once `rounds` rounds are in its metrics. */
async function killAfter(out: string, rounds: number): Promise<void> {
  const child = spawn(process.execPath, [cli, ...options(out)], { stdio: "ignore" });
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (rowsOf(out).length >= rounds) {
        clearInterval(poll);
        child.kill("SIGKILL");
      }
    }, 20);
    child.on("exit", (_code, signal) => {
      clearInterval(poll);
      if (signal === "SIGKILL") resolve();
      else reject(new Error(`the run ended by itself before it was killed (${rowsOf(out).length} rounds)`));
    });
  });
}

describe("resuming a killed run", () => {
  test("loses at most one round and ends where an uninterrupted run ends", async () => {
    const interrupted = tempDir("ft-resume-");
    const uninterrupted = tempDir("ft-straight-");
    await killAfter(interrupted, 3);
    const beforeResume = rowsOf(interrupted).length;
    expect(beforeResume).toBeGreaterThanOrEqual(3);

    const resumed = spawnSync(process.execPath, [cli, ...options(interrupted), "--resume"], { encoding: "utf8" });
    expect(resumed.status, resumed.stderr).toBe(0);
    const resumedFrom = Number(/resumed from round (\d+)/.exec(resumed.stdout)?.[1]);
    // Checkpoints are written every round: the kill can only have cost the round in progress.
    expect(resumedFrom).toBeGreaterThanOrEqual(beforeResume - 1);

    const straight = spawnSync(process.execPath, [cli, ...options(uninterrupted)], { encoding: "utf8" });
    expect(straight.status, straight.stderr).toBe(0);
    const strip = (rows: ReturnType<typeof rowsOf>) => rows.map(({ seconds: _, ...rest }) => rest);
    expect(strip(rowsOf(interrupted))).toEqual(strip(rowsOf(uninterrupted)));
    expect(rowsOf(interrupted).map((r) => r.round)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(readFileSync(join(interrupted, "metrics.csv"), "utf8").trim().split("\n")).toHaveLength(9);
  }, deadline(180_000));

  // A refusal before any data is read: through the CLI's main in this process, no process start-up.
  test("--resume with no checkpoint is a clear error", async () => {
    const empty = tempDir("ft-empty-");
    const run = await inProcessCli([...options(empty), "--resume"]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`FT304: ${empty}: --resume found no checkpoint there`);
  }, deadline(60_000));
});
