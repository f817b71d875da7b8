/**
 * The run folder: a new run never mixes with an old one, and every file fault (a file in the
 * way, /proc, a read-only or full disk) is an FT error without a stack trace. The disk faults
 * are real: small tmpfs mounts, made when the tests run as root (skipped, saying why, where
 * mounting is not allowed).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statfsSync, writeFileSync, writeSync, closeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { loadLatestCheckpoint } from "../../src/lib/run/checkpoint.js";
import { inProcessCli, metricsRows, runCli, smallRun, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";
import { deadline } from "../helpers/deadline.js";

const isRoot = process.getuid?.() === 0;
const mounted: string[] = [];
afterAll(() => {
  for (const dir of mounted) {
    spawnSync("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A tmpfs of `size` mounted on a fresh folder, or why it could not be. */
function mountTmpfs(options: string): { dir: string } | { reason: string } {
  if (!isRoot) return { reason: "mounting a tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "ft-tmpfs-"));
  const mount = spawnSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { encoding: "utf8" });
  if (mount.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { reason: `mount -t tmpfs -o ${options} failed: ${(mount.stderr || mount.error?.message || "").trim()}` };
  }
  mounted.push(dir);
  return { dir };
}

/** FT307 with `message`, exit status 1, no stack trace. */
function expectFault(status: number | null, output: string, message: string): void {
  expect(status, output).toBe(1);
  expect(output).toContain(`fedtensor run: FT307: ${message}`);
  expect(output).not.toMatch(stackLine);
}

/** The same for a run refused before any data is read, through the CLI's main in this process (no process start-up). */
async function expectFileFault(args: string[], message: string): Promise<void> {
  const run = await inProcessCli(args);
  expectFault(run.status, run.output, message);
}

describe("a new run in a folder that holds another run", () => {
  /** smallRun on the synthetic set: the claims are about the folder's files, whatever the data, and the runs read no MNIST. */
  const syntheticRun = (out: string, ...extra: string[]) => smallRun(out, "--dataset", "synthetic", ...extra);
  test("is FT305 unless --resume or --overwrite; --overwrite deletes the old run's files and nothing else", async () => {
    const out = tempDir("ft-old-run-");
    expect(runCli(syntheticRun(out, "--rounds", "3")).status).toBe(0);
    writeFileSync(join(out, "notes.txt"), "mine");

    // The refusals come before any data is read: through the CLI's main in this process.
    const again = await inProcessCli(syntheticRun(out, "--rounds", "2", "--seed", "1"));
    expect(again.status).toBe(2);
    expect(again.output).toContain(`FT305: --out: ${out} holds another run (checkpoint-00000001.safetensors, checkpoint-00000002.safetensors, checkpoint-00000003.safetensors and 5 more); give --resume to continue it or --overwrite to replace it`);
    // Its own why and fix, not FT305's general ones about unknown options.
    expect(again.output).toContain("why: The output folder already holds another run's files");
    expect(again.output).toContain("fix: Give --resume to continue that run, --overwrite to replace its files, or another folder with --out.");
    expect(again.output).not.toContain("unknown or has a value outside its range");
    expect(metricsRows(out).map((row) => row.round)).toEqual([1, 2, 3]);

    const both = await inProcessCli(syntheticRun(out, "--resume", "--overwrite"));
    expect(both.status).toBe(2);
    expect(both.output).toContain("--resume continues the run in --out, --overwrite deletes it: give one");

    const replaced = runCli(syntheticRun(out, "--rounds", "2", "--seed", "1", "--overwrite"));
    expect(replaced.status, replaced.stderr).toBe(0);
    expect(metricsRows(out).map((row) => row.round)).toEqual([1, 2]);
    expect(readdirSync(out).sort()).toEqual(["checkpoint-00000001.safetensors", "checkpoint-00000002.safetensors", "confusion.csv", "metrics.csv", "metrics.jsonl", "notes.txt", "plot.png", "plot.svg"]);
  }, deadline(60_000));
});

describe("file faults are FT307, never a stack trace", () => {
  test("the output folder is a file, or under one", async () => {
    const file = join(tempDir("ft-file-"), "a-file");
    writeFileSync(file, "");
    await expectFileFault(smallRun(file), `${file}: the output folder is a file`);
    await expectFileFault(smallRun(join(file, "run")), `${file}: is a file, so the output folder ${join(file, "run")} cannot be made under it`);
  }, deadline(60_000));

  test("/proc and /sys paths fail at once instead of spinning", async () => {
    if (process.platform !== "linux") return void console.log("skipped: /proc and /sys are Linux's");
    await expectFileFault(smallRun("/proc/fedtensor-run"), "/proc/fedtensor-run: is in a proc file system, which holds kernel state, not files");
    await expectFileFault(smallRun("/sys/fedtensor-run/deeper"), "/sys/fedtensor-run/deeper: is in a sysfs file system, which holds kernel state, not files");
  }, deadline(60_000));

  test("a folder that is not writable", async (context) => {
    let folder: string;
    if (isRoot) {
      // Root ignores permission bits: a read-only file system is what stops it.
      const mount = mountTmpfs("size=1m,ro");
      if ("reason" in mount) {
        console.log(`skipped: ${mount.reason}`);
        return context.skip(mount.reason);
      }
      folder = mount.dir;
    } else {
      folder = tempDir("ft-readonly-");
      chmodSync(folder, 0o500);
    }
    const why = isRoot ? "the file system is read-only (EROFS)" : "permission denied (EACCES)";
    await expectFileFault(smallRun(join(folder, "run")), `${join(folder, "run")}: cannot create the output folder: ${why}`);
    await expectFileFault(smallRun(folder), `${folder}: cannot write the run folder's lock: ${why}`);
  }, deadline(60_000));

  test("a full disk: the cut checkpoint is removed, the previous one stays, resume works once there is room", async (context) => {
    const mount = mountTmpfs("size=1m");
    if ("reason" in mount) {
      console.log(`skipped: ${mount.reason}`);
      return context.skip(mount.reason);
    }
    const out = join(mount.dir, "run");
    mkdirSync(out);
    const first = runCli(smallRun(out, "--rounds", "2", "--keep-checkpoints", "1"));
    expect(first.status, first.stderr).toBe(0);

    // Fill the disk, then free three pages: room for a metrics row and the lock, not for a checkpoint (32 KB).
    const filler = join(mount.dir, "filler");
    const fd = openSync(filler, "w");
    const page = Buffer.alloc(4096, 1);
    let size = 0;
    try {
      for (;;) size += writeSync(fd, page);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
    }
    ftruncateSync(fd, Math.max(0, size - 3 * 4096));
    closeSync(fd);
    expect(statfsSync(mount.dir).bavail).toBeLessThan(8);

    const full = runCli(smallRun(out, "--rounds", "4", "--keep-checkpoints", "1", "--resume"));
    expectFault(full.status, full.stderr, `${join(out, "checkpoint-00000003.safetensors")}: cannot write the checkpoint: the disk is full (ENOSPC)`);
    expect(readdirSync(out).filter((name) => name.includes(".tmp-"))).toEqual([]);
    expect((await loadLatestCheckpoint(out))!.checkpoint.round).toBe(2);

    rmSync(filler);
    const resumed = runCli(smallRun(out, "--rounds", "4", "--keep-checkpoints", "1", "--resume"));
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("resumed from round 2");
    expect(metricsRows(out).map((row) => row.round)).toEqual([1, 2, 3, 4]);
    expect(existsSync(join(out, "checkpoint-00000004.safetensors"))).toBe(true);
  }, deadline(90_000));
});
