/**
 * bench/huge-pages: what GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (set by vitest.config.ts for the
 * tests and every process they start) saves a small `fedtensor run` on this machine: the same
 * 4-round logistic run, alternately without and with it, --repeats times each in one process
 * tree. Prints each side's fastest wall time and its child CPU time (user + system, from
 * getrusage), and the ratios with / without. On VMs whose fresh pages fault to the host, most of
 * such a run is first touches of MNIST's 188 MB of float32.
 *
 * usage: node dist/bench/huge-pages.js [--repeats 5]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fastest } from "./stats.js";

const { values } = parseArgs({ options: { repeats: { type: "string", default: "5" } } });
const repeats = Number(values.repeats);
if (!(Number.isInteger(repeats) && repeats >= 1)) throw new Error(`--repeats: a whole number >= 1, got ${values.repeats}`);

const cli = join(dirname(fileURLToPath(import.meta.url)), "../../bin/fedtensor.js");
const runArgs = (out: string) => ["run", "--model", "logistic", "--clients", "20", "--clients-per-round", "3", "--batch-size", "100", "--rounds", "4", "--checkpoint-every", "1", "--out", out];

/** One run's wall and CPU seconds; `tunable` undefined runs without the variable. */
function once(tunable: string | undefined): { wall: number; cpu: number } {
  const env = { ...process.env };
  delete env.GLIBC_TUNABLES;
  if (tunable !== undefined) env.GLIBC_TUNABLES = tunable;
  const out = mkdtempSync(join(tmpdir(), "ft-huge-pages-"));
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, [cli, ...runArgs(out)], { env, encoding: "utf8" });
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  rmSync(out, { recursive: true, force: true });
  if (result.status !== 0) throw new Error(`fedtensor run failed: ${result.stderr}`);
  return { wall, cpu: childCpuSeconds() };
}

let lastChildCpu = 0;
/** CPU seconds (user + system) of the children waited for since the previous call: cutime + cstime of /proc/self/stat. */
function childCpuSeconds(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  // cutime and cstime are stat's fields 16 and 17; after the command name the list starts at field 3. Ticks are 1/100 s.
  const ticks = Number(fields[13]) + Number(fields[14]);
  const total = ticks / 100;
  const spent = total - lastChildCpu;
  lastChildCpu = total;
  return spent;
}
childCpuSeconds();
const sides = { without: [] as { wall: number; cpu: number }[], with: [] as { wall: number; cpu: number }[] };
for (let r = 0; r < repeats; r++) {
  sides.without.push(once(undefined));
  sides.with.push(once("glibc.malloc.hugetlb=1"));
}
const summary = (runs: { wall: number; cpu: number }[]) => ({ wall: fastest(runs.map((r) => r.wall)), cpu: fastest(runs.map((r) => r.cpu)) });
const [a, b] = [summary(sides.without), summary(sides.with)];
console.log(`4-round logistic fedtensor run, fastest of ${repeats} each, alternating:`);
console.log(`  without GLIBC_TUNABLES  wall ${a.wall.toFixed(2)} s  cpu ${a.cpu.toFixed(2)} s`);
console.log(`  hugetlb=1               wall ${b.wall.toFixed(2)} s  cpu ${b.cpu.toFixed(2)} s`);
console.log(`  ratio with / without    wall ${(b.wall / a.wall).toFixed(2)}  cpu ${(b.cpu / a.cpu).toFixed(2)}`);
