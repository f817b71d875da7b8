/**
 * `fedtensor check`: its output over the fixture project (and over examples/ when that has a
 * tsconfig.json), and its three exit statuses. Most runs call main() in this process; one runs
 * the installed bin to check that the status reaches the shell.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main.js";
import { fixtureProject, linkFedTensor, repoRoot } from "./language-service.js";
import { deadline } from "../../test/helpers/deadline.js";

const project = relative(process.cwd(), fixtureProject);

/** Runs `fedtensor check ...args` in this process: its exit status and what it printed. */
async function check(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void stdout.push(parts.join(" ")));
  vi.spyOn(console, "error").mockImplementation((...parts: unknown[]) => void stderr.push(parts.join(" ")));
  const status = await main(["check", ...args]);
  return { status, stdout: stdout.join("\n"), stderr: stderr.join("\n") };
}

/** Each FT error's block explains it, and the last line sums up what the exit status says. */
function expectExplainedOutput({ status, stdout }: { status: number; stdout: string }): void {
  const blocks = stdout.split(/\n\n(?=\S)/);
  for (const block of blocks.filter((b) => / - error FT\d{3}: /.test(b.split("\n")[0]!))) {
    expect(block).toMatch(/\n {2}What went wrong: .*\n {2}Why this is an? [a-z -]+ error: .*\n {2}How to fix it: /);
  }
  expect(status).toBe(stdout.startsWith("No errors") ? 0 : 1);
  expect(blocks.at(-1)).toMatch(status === 0 ? /^No errors in \d+ files?\.$/ : /^Found \d+ errors? \(\d+ FedTensor, \d+ TypeScript\) in \d+ files?\.$/);
}

// Every fixture project this file checks resolves "fedtensor" through its own link (another
// test file's beforeAll must not be what makes this one pass).
beforeAll(() => {
  for (const fixture of ["project", "editor", "options"]) linkFedTensor(join(repoRoot, "checker-plugin/test/fixtures", fixture));
});
afterEach(() => vi.restoreAllMocks());

describe("fedtensor check", () => {
  it("explains each FT error under a code frame, prints other errors plainly, and exits 1", async () => {
    const { status, stdout } = await check("-p", project);
    expect(status).toBe(1);
    expectExplainedOutput({ status, stdout });
    expect(stdout).toContain(
      [
        `${project}/mistakes.ts:4:105 - error FT104: mul() mixes {f32[10]}@CLIENTS with f32[10]@SERVER: broadcast the SERVER value or reduce the CLIENTS one`,
        "",
        "  4 | export const scaled = program({ w: atServer(f32([10])), x: atClients(f32([10])) }, ({ w, x }) => mul(x, w));",
        "    |                                                                                                         ^",
        "  What went wrong: Operation mixes SERVER and CLIENTS values.",
        "  Why this is a placement error: Operations on placed values run where the values live. One operand lives at the SERVER and the other at the CLIENTS, so there is no single place to compute the result.",
        "  How to fix it: Move one operand: broadcast(...) the SERVER value to compute at the CLIENTS, or reduceMean(...)/reduceSum(...) the CLIENTS value to compute at the SERVER.",
      ].join("\n"),
    );
    expect(stdout).toContain(`${project}/plain-error.ts:2:14 - error TS2322: Type 'string' is not assignable to type 'number'.\n\nFound`);
    expect(stdout.match(/^\S+:\d+:\d+ - error FT\d{3}: /gm)?.map((line) => line.slice(line.indexOf("FT"), -2))).toEqual([
      "FT104",
      "FT102",
      "FT202",
      "FT201",
      "FT203",
      "FT205",
    ]);
    expect(stdout).toMatchSnapshot();
  });

  it("exits 0 on a clean project", async () => {
    const { status, stdout } = await check(join(project, "tsconfig.clean.json"));
    expect({ status, stdout }).toEqual({ status: 0, stdout: "No errors in 1 file." });
  });

  it("exits 2 with a clear message for a missing or invalid tsconfig and for unknown options", async () => {
    const folder = mkdtempSync(join(tmpdir(), "fedtensor-check-"));
    try {
      expect(await check("-p", folder)).toMatchObject({ status: 2, stderr: expect.stringMatching(/^fedtensor check: no tsconfig\.json at .*tsconfig\.json\n/) });
      writeFileSync(join(folder, "tsconfig.json"), '{ "compilerOptions": { "strict": tru } }');
      const invalid = await check("--project", folder);
      expect(invalid.status).toBe(2);
      expect(invalid.stderr).toMatch(/^fedtensor check: invalid .*tsconfig\.json:\n {2}.*tsconfig\.json:1:\d+ - error TS\d+: /);
      expect(await check("--strict")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^fedtensor check: unknown option --strict\n/) });
      expect(await check("a", "b")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^fedtensor check: expected one project, got a, b\n/) });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("prints TypeScript's error and exits 2 for a tsconfig with a syntax error, and takes --project=path", async () => {
    const folder = mkdtempSync(join(tmpdir(), "fedtensor-check-"));
    try {
      writeFileSync(join(folder, "tsconfig.json"), '{ "compilerOptions": { "strict": true "noEmit": true } }');
      writeFileSync(join(folder, "main.ts"), "export const one = 1;\n");
      const broken = await check(`--project=${folder}`);
      expect(broken.status).toBe(2);
      expect(broken.stdout).toBe("");
      expect(broken.stderr).toMatch(/^fedtensor check: invalid .*tsconfig\.json:\n {2}.*tsconfig\.json:1:\d+ - error TS1005: ',' expected\.\n/);
      writeFileSync(join(folder, "tsconfig.json"), '{ "compilerOptions": { "strict": true, "noEmit": true } }');
      expect(await check(`--project=${folder}`)).toEqual({ status: 0, stdout: "No errors in 1 file.", stderr: "" });
      expect(await check("--project")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^fedtensor check: -p\/--project needs a path\n/) });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("reports every failing leaf of a tree once explained, and applies the plugin's options and suppression comments", async () => {
    const trees = await check("-p", relative(process.cwd(), join(repoRoot, "checker-plugin/test/fixtures/editor/tsconfig.json")));
    const block = trees.stdout.split(/\n\n(?=\S)/).find((b) => b.includes("trees.ts"))!;
    expect(block.match(/FT104: add\(\) mixes/g)).toHaveLength(8);
    expect(block.match(/What went wrong: /g)).toHaveLength(1);
    const options = await check("-p", relative(process.cwd(), join(repoRoot, "checker-plugin/test/fixtures/options")));
    expect(options.status).toBe(1);
    expect(options.stdout.match(/^\S+:\d+:\d+ - \w+ FT\d{3}/gm)?.map((l) => l.replace(/^\S+:(\d+):\d+ - /, "$1 "))).toEqual(["5 warning FT201", "14 error FT104", "16 error FT205"]);
    expect(options.stdout).not.toContain("What went wrong");
    expect(options.stdout).toMatch(/\nFound 2 errors \(2 FedTensor, 0 TypeScript\) in 1 file\.$/);
  });

  it("stops with FT305 on an invalid plugin option", async () => {
    const folder = mkdtempSync(join(tmpdir(), "fedtensor-check-"));
    try {
      writeFileSync(join(folder, "tsconfig.json"), JSON.stringify({ compilerOptions: { plugins: [{ name: "fedtensor/checker-plugin", explanation: "long" }] } }));
      writeFileSync(join(folder, "main.ts"), "export const one = 1;\n");
      const { status, stderr } = await check("-p", folder);
      expect(status).toBe(2);
      expect(stderr).toMatch(/^fedtensor check: FT305: fedtensor\/checker-plugin option explanation in .*tsconfig\.json: must be "full" or "short", got "long"\n/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("sets the process exit status from the installed bin", () => {
    const run = spawnSync(process.execPath, [join(repoRoot, "bin/fedtensor.js"), "check", "-p", "no/such/project"], { encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^fedtensor check: no tsconfig\.json at no\/such\/project\n/);
  });

  it("leaves a user's first strict tsc, without skipLibCheck, clean: the public types bring in no TensorFlow.js declaration errors", async () => {
    const folder = mkdtempSync(join(tmpdir(), "fedtensor-strict-"));
    try {
      linkFedTensor(folder);
      writeFileSync(
        join(folder, "main.ts"),
        'import { atClients, f32, program, reduceMean } from "fedtensor";\n' +
          "export const mean = program({ x: atClients(f32([10])) }, ({ x }) => reduceMean(x));\n" +
          "export const run = (x: Parameters<typeof mean.run>[0]) => mean.run(x);\n",
      );
      for (const types of [undefined, []]) {
        const compilerOptions = { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, ...(types && { types }) };
        writeFileSync(join(folder, "tsconfig.json"), JSON.stringify({ compilerOptions }));
        const tsc = spawnSync(process.execPath, [join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", folder], { encoding: "utf8" });
        expect({ types, status: tsc.status, output: tsc.stdout + tsc.stderr }).toEqual({ types, status: 0, output: "" });
      }
      expect(await check("-p", folder)).toMatchObject({ status: 0, stdout: "No errors in 1 file." });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    // Three checks of the declarations without skipLibCheck take half a minute on two cores.
  }, deadline(180_000));

  it.runIf(existsSync(join(repoRoot, "examples/tsconfig.json")))("checks examples/ with every FT error explained: exactly the mistakes examples/mistakes.ts names", async () => {
    const result = await check("-p", relative(process.cwd(), join(repoRoot, "examples")));
    expectExplainedOutput(result);
    // Each mistake's comment names its code, "(FT102)": those, in order, and nothing else; the other examples are clean.
    const named = [...readFileSync(join(repoRoot, "examples/mistakes.ts"), "utf8").matchAll(/\((FT\d{3})/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThanOrEqual(10);
    expect(result.status).toBe(1);
    expect(result.stdout.match(/^\S+:\d+:\d+ - error FT\d{3}: /gm)?.map((line) => line.slice(line.indexOf("FT"), -2))).toEqual(named);
    expect(result.stdout.match(/^(\S+):\d+:\d+ - error /gm)?.every((line) => line.startsWith("examples/mistakes.ts:"))).toBe(true);
    expect(result.stdout).toMatch(new RegExp(`Found ${named.length} errors \\(${named.length} FedTensor, 0 TypeScript\\) in 1 file\\.$`));
  });
});
