/**
 * One writer per run folder: a second process (a new run, an --overwrite or a --resume) gets
 * FT308 naming the holder while the first runs; once the holder is killed, its lock is stale
 * and the next run takes it over at once.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { FedTensorError } from "../../src/errors/error.js";
import { lockFileName, lockRunFolder } from "../../src/lib/run/lock.js";
import { inProcessCli, metricsRows, runCli, smallRun, stackLine, startCli } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

/** smallRun on the synthetic set: the claims are about the folder's lock, whatever the data, and no process here then reads MNIST. */
const lockedRun = (out: string, ...extra: string[]) => smallRun(out, "--dataset", "synthetic", ...extra);
const lockPath = (dir: string) => join(dir, lockFileName);
const lockRecord = (dir: string) => JSON.parse(readFileSync(lockPath(dir), "utf8")) as { pid: number; host: string };

/** The pid of a process that has ended (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

async function lockError(dir: string): Promise<FedTensorError> {
  const error = await lockRunFolder(dir).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FedTensorError);
  return error as FedTensorError;
}

describe("a second process in a run folder", () => {
  test("gets FT308 naming the running holder; after the holder is killed, --resume takes over at once", async () => {
    const out = tempDir("ft-lock-");
    const holder = startCli(lockedRun(out, "--rounds", "100000", "--eval-every", "100000"));
    try {
      await new Promise<void>((resolve, reject) => {
        const poll = setInterval(() => {
          if (metricsRows(out).length >= 2) {
            clearInterval(poll);
            resolve();
          }
        }, 50);
        holder.on("exit", (code) => {
          clearInterval(poll);
          reject(new Error(`the holder ended by itself (exit ${code})`));
        });
      });
      // The refusals, before any data is read, through the CLI's main in this process: no process start-up each.
      for (const extra of [["--resume"], ["--overwrite"], ["--resume", "--rounds", "3"]]) {
        const second = await inProcessCli(lockedRun(out, ...extra));
        expect(second.status, second.stderr).toBe(1);
        expect(second.stderr).toMatch(new RegExp(`FT308: ${out} is in use by process ${holder.pid} on ${hostname()} \\(.*fedtensor\\.js run .*\\), running since \\d{4}-\\d\\d-\\d\\dT`));
        expect(second.stderr).not.toMatch(stackLine);
      }
      // The holder's rows are its own, in order: nobody else wrote into the folder.
      const rounds = metricsRows(out).map((row) => row.round);
      expect(rounds).toEqual(rounds.map((_, i) => i + 1));
    } finally {
      holder.kill("SIGKILL");
      await new Promise((resolve) => (holder.exitCode !== null || holder.signalCode !== null ? resolve(undefined) : holder.on("exit", resolve)));
    }
    expect(lockRecord(out).pid).toBe(holder.pid);
    const resumed = runCli(lockedRun(out, "--resume", "--rounds", "2"));
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed from round \d+/);
  }, deadline(120_000));
});

describe("two runs started together in one new folder", () => {
  test("one runs, the other gets FT308; the metrics are one run's rows, in order", async () => {
    const out = join(tempDir("ft-lock-race-"), "run");
    // Neither would end by itself: whichever is second meets the lock, however late it starts.
    const children = ["1", "2"].map((seed) => startCli(lockedRun(out, "--rounds", "100000", "--eval-every", "100000", "--seed", seed)));
    const exits = children.map((child) => {
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout!.resume();
      return new Promise<{ child: typeof child; code: number | null; stderr: string }>((resolve) => child.on("exit", (code) => resolve({ child, code, stderr })));
    });
    const loser = await Promise.race(exits);
    const winner = children.find((child) => child !== loser.child)!;
    try {
      expect(loser.code).toBe(1);
      expect(loser.stderr).toContain(`FT308: ${out} is in use by process ${winner.pid}`);
      expect(loser.stderr).not.toMatch(stackLine);
      // The winner goes on: two more of its rows, and nothing from the loser.
      await new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (metricsRows(out).length >= 2) {
            clearInterval(poll);
            resolve();
          }
        }, 50);
      });
    } finally {
      winner.kill("SIGKILL");
      await Promise.all(exits);
    }
    const rounds = metricsRows(out).map((row) => row.round);
    expect(rounds).toEqual(rounds.map((_, i) => i + 1));
  }, deadline(120_000));
});

describe("lockRunFolder", () => {
  test("a held lock is FT308 for this process too; release frees it", async () => {
    const dir = tempDir("ft-lock-self-");
    const lock = await lockRunFolder(dir);
    expect((await lockError(dir)).message).toContain(`is in use by process ${process.pid} on ${hostname()}`);
    await lock.release();
    const again = await lockRunFolder(dir);
    await again.release();
  });

  test("a lock left by a process that has ended is taken over", async () => {
    const dir = tempDir("ft-lock-stale-");
    writeFileSync(lockPath(dir), JSON.stringify({ pid: deadPid(), host: hostname(), since: "2026-01-01T00:00:00.000Z", command: "gone" }));
    const lock = await lockRunFolder(dir);
    expect(lockRecord(dir).pid).toBe(process.pid);
    await lock.release();
  });

  test("a lock whose pid now belongs to another process (another start time) is taken over", async (context) => {
    if (process.platform !== "linux") return context.skip("process start times come from Linux's /proc");
    const dir = tempDir("ft-lock-reused-");
    writeFileSync(lockPath(dir), JSON.stringify({ pid: process.pid, host: hostname(), since: "2026-01-01T00:00:00.000Z", processStart: "1", command: "old" }));
    const lock = await lockRunFolder(dir);
    expect(lockRecord(dir)).toMatchObject({ pid: process.pid, command: expect.not.stringMatching(/^old$/) });
    await lock.release();
  });

  test("a lock from another host, or a file that is not a lock, is never taken over", async () => {
    const dir = tempDir("ft-lock-host-");
    writeFileSync(lockPath(dir), JSON.stringify({ pid: 1, host: "elsewhere", since: "2026-01-01T00:00:00.000Z", command: "fedtensor run" }));
    expect((await lockError(dir)).message).toBe(`FT308: ${dir} is in use by process 1 on elsewhere (fedtensor run), running since 2026-01-01T00:00:00.000Z`);
    writeFileSync(lockPath(dir), "");
    expect((await lockError(dir)).message).toContain(`an unknown process (${lockPath(dir)} is not a FedTensor lock; delete it if no run uses the folder)`);
  });

  test("release leaves a lock that another process holds now", async () => {
    const dir = tempDir("ft-lock-release-");
    const lock = await lockRunFolder(dir);
    const other = JSON.stringify({ pid: 1, host: "elsewhere", since: "2026-01-01T00:00:00.000Z", command: "other" });
    writeFileSync(lockPath(dir), other);
    await lock.release();
    expect(readFileSync(lockPath(dir), "utf8")).toBe(other);
  });
});
