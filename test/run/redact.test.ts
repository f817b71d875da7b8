/**
 * Credentials in URLs never printed or written (issue 34, item 6): `--engine
 * redis://user:password@host` is how Redis takes a password, and FT319 printed it back. One
 * function (src/errors/redact.ts) redacts every FT message, the CLI's reports, logs, metrics
 * rows and the stored config; each path is attacked here with a password that must not appear.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, test, vi } from "vitest";
import { ftError } from "../../src/errors/error.js";
import { hasRedactedCredentials, redactCredentials } from "../../src/errors/redact.js";
import { reportFailure } from "../../src/cli/main.js";
import { MetricsWriter } from "../../src/lib/run/metrics.js";
import { freePort, redisBinary, startRedis } from "../../bench/redis-server.js";
import { deadline } from "../helpers/deadline.js";
import { inProcessCli, runCli, startCli, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";

const secret = "s3cret-Pa55";

/** Every byte of every file under `dir`, as text. */
const folderText = (dir: string) => readdirSync(dir).map((name) => readFileSync(join(dir, name)).toString("latin1")).join("\n");

describe("redactCredentials", () => {
  test.each([
    ["redis://user:pw@host:6379", "redis://user:***@host:6379"],
    ["redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"],
    ["rediss://token@host", "rediss://***@host"],
    ["cannot reach Redis at redis://a:b%40c@h:1: ECONNREFUSED; try redis://x:y@z", "cannot reach Redis at redis://a:***@h:1: ECONNREFUSED; try redis://x:***@z"],
    ["redis://127.0.0.1:6379 and user@example.com", "redis://127.0.0.1:6379 and user@example.com"],
  ])("%s", (text, redacted) => {
    expect(redactCredentials(text)).toBe(redacted);
    expect(hasRedactedCredentials(redacted)).toBe(redacted !== text);
  });

  test("an FT message redacts every value it is filled with", () => {
    expect(ftError("FT319", { url: `redis://u:${secret}@h:1`, why: `refused by redis://u:${secret}@h:1` }).message).toBe("FT319: cannot reach Redis at redis://u:***@h:1: refused by redis://u:***@h:1");
  });
});

describe("the CLI's reports", () => {
  afterEach(() => vi.restoreAllMocks());

  test("an internal error's report repeats the command line without the password", () => {
    const printed: string[] = [];
    vi.spyOn(console, "error").mockImplementation((text: string) => void printed.push(text));
    const status = reportFailure({ name: "run", usage: "" }, ["run", "--engine", `redis://u:${secret}@h:1`], new Error(`boom at redis://u:${secret}@h:1`));
    expect(status).toBe(70);
    expect(printed.join("\n")).toContain("command: fedtensor run --engine redis://u:***@h:1");
    expect(printed.join("\n")).not.toContain(secret);
  });

  test("run --engine with a password to an unreachable Redis: FT319 without the password", async () => {
    const url = `redis://user:${secret}@127.0.0.1:${await freePort()}`;
    // Through the CLI's main in this process, on the synthetic set (the run reads its data before it connects; MNIST is not read here).
    const run = await inProcessCli(["run", "--model", "logistic", "--dataset", "synthetic", "--clients", "20", "--clients-per-round", "3", "--rounds", "1", "--engine", url, "--out", tempDir("ft-redact-")]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^fedtensor run: FT319: cannot reach Redis at redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+: /);
    expect(run.stdout + run.stderr).not.toContain(secret);
    expect(run.stderr).not.toMatch(stackLine);
    const worker = await inProcessCli(["worker", "--redis", url]);
    expect(worker.stderr).toMatch(/FT319: cannot reach Redis at redis:\/\/user:\*\*\*@/);
    expect(worker.stdout + worker.stderr).not.toContain(secret);
  }, deadline(120_000));
});

test("a metrics row's text values are redacted in both files", () => {
  const dir = tempDir("ft-redact-metrics-");
  const writer = MetricsWriter.create(dir);
  writer.append({ round: 1, note: `engine redis://u:${secret}@h:1` });
  writer.close();
  expect(readFileSync(join(dir, "metrics.jsonl"), "utf8")).toBe('{"round":1,"note":"engine redis://u:***@h:1"}\n');
  expect(readFileSync(join(dir, "metrics.csv"), "utf8")).toBe("round,note\r\n1,engine redis://u:***@h:1\r\n");
});

describe.skipIf(redisBinary === undefined)("a run through a Redis that requires a password", () => {
  test("nothing it prints or writes holds the password; a resume asks for --engine again", async () => {
    const redis = await startRedis(secret);
    const worker = startCli(["worker", "--redis", redis.url]);
    let workerOutput = "";
    try {
      await new Promise<void>((resolve, reject) => {
        worker.stdout!.on("data", (chunk: Buffer) => {
          workerOutput += chunk.toString();
          if (workerOutput.includes("waiting for chunks")) resolve();
        });
        worker.once("exit", (code) => reject(new Error(`the worker exited with ${code}: ${workerOutput}`)));
      });
      const out = tempDir("ft-redact-engine-");
      // The synthetic set: the claim is about what is printed and written, whatever the data; the runs and the worker then read no MNIST.
      const args = ["run", "--model", "logistic", "--dataset", "synthetic", "--clients", "20", "--clients-per-round", "4", "--chunk-clients", "2", "--batch-size", "50", "--checkpoint-every", "1", "--out", out];
      const run = runCli([...args, "--rounds", "1", "--engine", redis.url], 120_000);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain("engine redis://:***@127.0.0.1:");
      expect(run.stdout + run.stderr + workerOutput).not.toContain(secret);
      expect(workerOutput).toContain("waiting for chunks on redis://:***@127.0.0.1:");
      expect(folderText(out)).not.toContain(secret);
      expect(folderText(out)).toContain("redis://:***@127.0.0.1:");

      // The refusal comes before any data is read: through the CLI's main in this process.
      const again = await inProcessCli([...args, "--resume", "--rounds", "2"]);
      expect(again.status).toBe(2);
      expect(again.stderr).toMatch(/FT305: --engine: the run used redis:\/\/:\*\*\*@127\.0\.0\.1:\d+, whose password is never written to a checkpoint; give --engine with the password again/);
      const resumed = runCli([...args, "--resume", "--rounds", "2", "--engine", redis.url], 120_000);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(folderText(out)).not.toContain(secret);
    } finally {
      worker.kill("SIGKILL");
      redis.kill();
    }
  }, deadline(300_000));
});
