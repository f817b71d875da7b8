/**
 * `fedtensor ir <module>` imports the module to find its programs, which runs its top-level
 * code: examples guard their main() (docs/runtime.md "fedtensor ir"), so printing a program's
 * IR never runs its training loop.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { runCli } from "./cli.js";

const examples = join(import.meta.dirname, "../../examples");
const mainGuard = /^if \(import\.meta\.url === pathToFileURL\(process\.argv\[1\] \?\? ""\)\.href\)/;

test("every example runs its work only when it is the program started", () => {
  let guarded = 0;
  for (const name of readdirSync(examples).filter((f) => f.endsWith(".ts"))) {
    const lines = readFileSync(join(examples, name), "utf8").split("\n");
    // A top-level statement that does work: a call of main() or an await outside a function.
    const work = lines.filter((line) => /^(await |main\(|void main\()/.test(line) || /^if \(.*\) (await )?main\(\)/.test(line));
    for (const line of work) expect(line, `${name}: ${line}`).toMatch(mainGuard);
    guarded += work.length;
  }
  expect(guarded).toBeGreaterThanOrEqual(5);
});

test("fedtensor ir prints an example's programs without running its main()", () => {
  const run = runCli(["ir", join(import.meta.dirname, "../../dist/examples/noisy-fedsgd.js"), "--signature"]);
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/^noisyRound: \(<w=f32\[8\]@SERVER/);
  // main() would print the backend first and then train.
  expect(run.stdout).not.toContain("backend:");
});
