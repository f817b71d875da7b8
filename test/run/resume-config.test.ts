/**
 * `--resume` continues the run whose checkpoint is in --out, with that run's config: options
 * that change what a round computes must not differ (FT305 names each), the others may, and
 * the config file is not needed. It says what it resumed from, which damaged checkpoints it
 * skipped, and, for a run that had finished, its real result.
 */
import { truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { listCheckpoints } from "../../src/lib/run/checkpoint.js";
import { validateRunConfig } from "../../src/lib/run/config.js";
import { resumeConfig } from "../../src/lib/run/resume-config.js";
import { inProcessCli, metricsRows, runCli, smallRun, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

describe("resumeConfig", () => {
  const stored = { algorithm: "fedadam", model: "logistic", seed: 7, rounds: 4, serverLr: 0.05, out: "/elsewhere" };
  const requested = (given: Record<string, unknown>) => validateRunConfig({ out: "/here", resume: true, ...given }, "test");

  test("takes the checkpoint's config, with the options that may change and the folder asked for", () => {
    const given = { rounds: 9, evalEvery: 3, backend: "wasm" };
    const config = resumeConfig(requested(given), ["out", "resume", ...Object.keys(given)] as never, stored, "ckpt");
    expect(config).toMatchObject({ algorithm: "fedadam", seed: 7, serverLr: 0.05, beta1: 0.9, rounds: 9, evalEvery: 3, backend: "wasm", out: "/here", resume: true });
  });

  test("an option that changes the computation, given with another value, is FT305 naming each", () => {
    const given = { seed: 5, algorithm: "fedavg" };
    expect(() => resumeConfig(requested(given), ["seed", "algorithm"], stored, "ckpt")).toThrow(
      "FT305: --resume (2 options): --seed 5 (the checkpoint's run has 7); --algorithm fedavg (the checkpoint's run has fedadam)",
    );
    // The same value given again is no difference.
    expect(resumeConfig(requested({ seed: 7, algorithm: "fedadam" }), ["seed", "algorithm"], stored, "ckpt").seed).toBe(7);
  });

  test("a checkpoint without a config is FT304", () => {
    expect(() => resumeConfig(requested({}), [], null, "ckpt")).toThrow("FT304: ckpt: holds no run config to resume with");
  });
});

describe("fedtensor run --resume", () => {
  let out: string;
  beforeAll(() => {
    out = tempDir("ft-resume-config-");
    const first = runCli(smallRun(out, "--rounds", "3", "--algorithm", "fedadam", "--seed", "4", "--eval-every", "3"));
    expect(first.status, first.stderr).toBe(0);
  }, deadline(60_000));

  // A refusal before any data is read: through the CLI's main in this process, no process start-up.
  test("options that change the computation are FT305 naming each, exit 2, no stack", async () => {
    const run = await inProcessCli(smallRun(out, "--resume", "--seed", "5", "--algorithm", "scaffold", "--lr", "0.5"));
    expect(run.status).toBe(2);
    expect(run.output).toContain("FT305: --resume (3 options): --seed 5 (the checkpoint's run has 4); --algorithm scaffold (the checkpoint's run has fedadam); --lr 0.5 (the checkpoint's run has 0.1)");
    expect(run.output).not.toMatch(stackLine);
  }, deadline(60_000));

  test("a finished run resumed prints its real final accuracy and rounds", () => {
    const finalRow = metricsRows(out).at(-1)!;
    const run = runCli(["run", "--resume", "--out", out]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("the run had finished: its checkpoint is of round 3 of 3; nothing left to train (raise --rounds to go on)");
    const accuracy = ((finalRow.test_accuracy as number) * 100).toFixed(2);
    expect(run.stdout).toContain(`final test accuracy: ${accuracy}% after 3 rounds of fedadam (logistic, mnist)`);
  }, deadline(60_000));

  test("without the config, with new rounds and cadence, it continues with the checkpoint's config; a damaged checkpoint is reported", async () => {
    const newest = (await listCheckpoints(out)).at(-1)!.path;
    expect(newest).toBe(join(out, "checkpoint-00000003.safetensors"));
    truncateSync(newest, 100);
    const run = runCli(["run", "--resume", "--out", out, "--rounds", "5", "--eval-every", "1", "--backend", "wasm"]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`skipped damaged checkpoint ${newest}: FT304: ${newest}: not a readable safetensors checkpoint (100 bytes): truncated`);
    expect(run.stdout).toContain(`resumed from round 2 (${join(out, "checkpoint-00000002.safetensors")})`);
    expect(run.stdout).toMatch(/after 5 rounds of fedadam \(logistic, mnist\)/);
    expect(metricsRows(out).map((row) => row.round)).toEqual([1, 2, 3, 4, 5]);
  }, deadline(60_000));

  test("with the same config file it resumes; with a changed one it is FT305", async () => {
    const dir = tempDir("ft-resume-file-");
    const file = join(dir, "run.json");
    const settings = { model: "logistic", clients: 20, clientsPerRound: 3, batchSize: 100, rounds: 2, checkpointEvery: 1, out: join(dir, "out") };
    writeFileSync(file, JSON.stringify(settings));
    expect(runCli(["run", file]).status).toBe(0);
    const resumed = runCli(["run", file, "--resume", "--rounds", "3"]);
    expect(resumed.status, resumed.stderr).toBe(0);
    writeFileSync(file, JSON.stringify({ ...settings, partition: "dirichlet" }));
    // The refusal, before any data is read, through the CLI's main in this process.
    const changed = await inProcessCli(["run", file, "--resume"]);
    expect(changed.status).toBe(2);
    expect(changed.output).toContain("--partition dirichlet (the checkpoint's run has iid)");
  }, deadline(60_000));
});
