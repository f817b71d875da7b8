/**
 * Every file of a run folder is written whole or not at all (issue 34, item 7): a full disk
 * left a truncated plot.png under its final name. Writes are failed for real: a body that
 * fails part-way, and the CLI run under `ulimit -f` (a file-size limit: writes past it fail
 * with EFBIG, as they would with ENOSPC on a full disk).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempFileBase, writeFileAtomic } from "../../src/lib/run/atomic-file.js";
import { readMetricsFile } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { cli, runCli, smallRun, stackLine } from "./cli.js";
import { tempDir } from "./temp-dir.js";

/** Runs `node args` with every file it writes limited to `kib` KiB. */
function limited(kib: number, args: readonly string[], timeout: number) {
  const quoted = args.map((arg) => `'${arg.replace(/'/g, "'\\''")}'`).join(" ");
  // POSIX counts ulimit -f in blocks of 512 bytes (dash, and bash as sh).
  const run = spawnSync("sh", ["-c", `ulimit -f ${kib * 2} && exec '${process.execPath}' ${quoted}`], { encoding: "utf8", timeout });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const filesOf = (dir: string) => Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name))]));

describe("writeFileAtomic", () => {
  test("a write that fails part-way leaves the old file whole and no temp file", async () => {
    const dir = tempDir("ft-atomic-");
    const path = join(dir, "plot.png");
    writeFileSync(path, "the previous plot");
    function* failing(): Iterable<Uint8Array> {
      yield Buffer.alloc(40_960, 1);
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" });
    }
    await expect(writeFileAtomic(path, failing())).rejects.toThrow(/ENOSPC/);
    expect(readFileSync(path, "utf8")).toBe("the previous plot");
    expect(readdirSync(dir)).toEqual(["plot.png"]);
    await writeFileAtomic(path, "the next plot");
    expect(readFileSync(path, "utf8")).toBe("the next plot");
    expect(readdirSync(dir)).toEqual(["plot.png"]);
  });

  test("an exclusive write keeps a file already there (the run's secret key)", async () => {
    const dir = tempDir("ft-atomic-x-");
    const path = join(dir, "secret.key");
    await writeFileAtomic(path, "first\n", { mode: 0o600, exclusive: true });
    await expect(writeFileAtomic(path, "second\n", { mode: 0o600, exclusive: true })).rejects.toThrow(/EEXIST/);
    expect(readFileSync(path, "utf8")).toBe("first\n");
    expect(readdirSync(dir)).toEqual(["secret.key"]);
  });

  test("a temp file is known by the file it was for", () => {
    expect(tempFileBase(".plot.png.tmp-123-1700000000000")).toBe("plot.png");
    expect(tempFileBase("plot.png")).toBeUndefined();
  });
});

describe("a run folder's files on a disk that fills up", () => {
  test("a resumed run whose plot cannot be written: FT307, and plot.png is the old one, whole", () => {
    const out = tempDir("ft-atomic-run-");
    const first = runCli(smallRun(out, "--rounds", "2"), 120_000);
    expect(first.status, first.stderr).toBe(0);
    const before = filesOf(out);
    expect(before["plot.png"]!.length).toBeGreaterThan(60 * 1024);
    // 60 KiB: the metrics and checkpoints fit, plot.png does not.
    const cut = limited(60, [cli, ...smallRun(out, "--resume", "--rounds", "3")], deadline(120_000));
    expect(cut.status, cut.stdout).toBe(1);
    expect(cut.stderr).toMatch(/FT307: .*plot.*\(EFBIG\)/);
    expect(cut.stderr).not.toMatch(stackLine);
    const after = filesOf(out);
    expect(after["plot.png"]).toEqual(before["plot.png"]);
    // plot.svg (26 KB) was written first, whole: the new one, of round 3.
    expect(after["plot.svg"]!.toString("utf8").trimEnd().endsWith("</svg>")).toBe(true);
    expect(Object.keys(after).filter((name) => tempFileBase(name) !== undefined)).toEqual([]);
  }, deadline(240_000));

  test("metrics rows that cannot be written are taken back off: both files end with whole rows", () => {
    const dir = tempDir("ft-atomic-metrics-");
    const metrics = join(cli, "../../dist/src/lib/run/metrics.js");
    const script = `import { MetricsWriter } from ${JSON.stringify(metrics)}; const w = MetricsWriter.create(${JSON.stringify(dir)}); for (let round = 1; ; round++) w.append({ round, note: "x".repeat(150) });`;
    const cut = limited(2, ["--input-type=module", "-e", script], deadline(60_000));
    expect(cut.status).not.toBe(0);
    expect(cut.stderr).toMatch(/FT307: .*cannot append to the metrics files: the file would be larger than this process may write \(ulimit -f\) \(EFBIG\)/);
    const { rows, torn } = readMetricsFile(join(dir, "metrics.jsonl"));
    expect(torn).toBe("");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((row) => row.round)).toEqual(rows.map((_, i) => i + 1));
    const csv = readFileSync(join(dir, "metrics.csv"), "utf8");
    expect(csv.endsWith("\r\n")).toBe(true);
    expect(csv.split("\r\n").length - 2).toBe(rows.length);
  }, deadline(60_000));
});
