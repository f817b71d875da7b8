/**
 * Your own project, as a user makes one (docs/guide.md, "Your own project"): `fedtensor init`,
 * then `npm install` of the packed checkout as a registry install would be (offline, from the
 * npm cache: test/helpers/packed-install.ts), with no environment variable; in that project
 * `npx fedtensor --help`, plain `tsc` with the plugin entry, `npx fedtensor exec` of a
 * three-line program (and of one with an FT error, reported at its line), `npm start`,
 * `npm test` (vitest and tsd), and `npx fedtensor init` from the installed package.
 *
 * One packed install serves every case (installing takes a minute or two). Needs dist/
 * (`npm run build`, as `npm test` builds first) and the npm cache of the checkout's `npm ci`.
 */
import { execFile, type ExecFileException } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { deadline } from "./helpers/deadline.js";
import { installOffline, packCheckout, userEnvironment } from "./helpers/packed-install.js";

const root = join(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "fedtensor-own-project-"));
const project = join(work, "my-fl");
let installLog = "";

interface Ran {
  readonly code: number;
  readonly output: string;
}

/** A command in the project, as a user's shell runs it: its exit status and what it printed. */
async function inProject(command: string, args: readonly string[], timeout = deadline(120_000)): Promise<Ran> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, [...args], { cwd: project, env: userEnvironment(), timeout });
    return { code: 0, output: stripVTControlCharacters(stdout + stderr) };
  } catch (thrown) {
    const error = thrown as ExecFileException & { stdout?: string; stderr?: string };
    if (typeof error.code !== "number") throw error;
    return { code: error.code, output: stripVTControlCharacters(`${error.stdout ?? ""}${error.stderr ?? ""}`) };
  }
}

beforeAll(async () => {
  expect(existsSync(join(root, "dist/src/cli/main.js")), "dist/ is missing: run `npm run build` first").toBe(true);
  const tarball = packCheckout(root, work);
  // `npx fedtensor init my-fl` runs this same bin file from the registry's package.
  await promisify(execFile)(process.execPath, [join(root, "bin/fedtensor.js"), "init", "my-fl"], { cwd: work, env: userEnvironment() });
  installLog = await installOffline(root, project, tarball, deadline(600_000));
}, deadline(700_000));

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("a project that depends on the packed fedtensor", { timeout: deadline(180_000) }, () => {
  test("installs offline with the settings init writes: no install script reaches for NuGet", () => {
    expect(readFileSync(join(project, ".npmrc"), "utf8")).toMatch(/^ignore-scripts=true$/m);
    // onnxruntime-node's CPU binary ships in its package; its script would have fetched the CUDA provider.
    expect(existsSync(join(project, "node_modules/onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node"))).toBe(true);
    expect(existsSync(join(project, "node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so"))).toBe(false);
    expect(installLog).not.toMatch(/nuget|ENOTFOUND|install-scripts/i);
  });

  test("npx fedtensor --help lists the commands", async () => {
    const { code, output } = await inProject("npx", ["fedtensor", "--help"]);
    expect(code).toBe(0);
    for (const command of ["init", "exec", "run", "check"]) expect(output).toMatch(new RegExp(`^  ${command} `, "m"));
  });

  test("plain tsc type-checks the project, the plugin entry in its tsconfig, and the packed declarations", async () => {
    expect(JSON.parse(readFileSync(join(project, "tsconfig.json"), "utf8")).compilerOptions.plugins).toEqual([{ name: "fedtensor/checker-plugin" }]);
    // init's tsconfig skips the libraries' declarations (as tsc --init does); a user who checks
    // them must find fedtensor's (and what they import) sound.
    const { code, output } = await inProject("npx", ["tsc", "-p", "tsconfig.json", "--skipLibCheck", "false"]);
    expect(output).toBe("");
    expect(code).toBe(0);
  });

  test("fedtensor exec runs a three-line program", async () => {
    writeFileSync(
      join(project, "src/three.ts"),
      [
        'import { atClients, f32, program, reduceMean } from "fedtensor";',
        "const mean = program({ x: atClients(f32([2])) }, ({ x }) => reduceMean(x));",
        "console.log(Array.from(await (await mean.run({ x: [[1, 2], [3, 4]] })).data()));",
      ].join("\n"),
    );
    const { code, output } = await inProject("npx", ["fedtensor", "exec", "src/three.ts"]);
    expect(output.trim()).toBe("[ 2, 3 ]");
    expect(code).toBe(0);
  });

  test("fedtensor exec refuses a program with a placement error, explained at its line, before running it", async () => {
    writeFileSync(
      join(project, "src/mistake.ts"),
      [
        'import { atClients, atServer, f32, map, mul, program } from "fedtensor";',
        'console.log("ran");',
        "program({ w: atServer(f32([2])), x: atClients(f32([2])) }, ({ w, x }) => map((wm, xm) => mul(wm, xm), w, x));",
      ].join("\n"),
    );
    const { code, output } = await inProject("npx", ["fedtensor", "exec", "src/mistake.ts"]);
    expect(code).toBe(1);
    expect(output).toContain("src/mistake.ts:3:");
    expect(output).toContain("FT102: map() takes CLIENTS values");
    expect(output).not.toContain("ran");
  });

  test("fedtensor exec reports an FT error thrown while the program runs at the program's .ts line", async () => {
    writeFileSync(
      join(project, "src/bad-input.ts"),
      [
        'import { atClients, f32, program, reduceMean } from "fedtensor";',
        "const mean = program({ x: atClients(f32([2])) }, ({ x }) => reduceMean(x));",
        "",
        "await mean.run({ x: [[1, 2, 3]] });",
      ].join("\n"),
    );
    const { code, output } = await inProject("npx", ["fedtensor", "exec", "src/bad-input.ts"]);
    expect(code).toBe(1);
    expect(output).toMatch(/fedtensor exec: FT\d{3}: /);
    expect(output).toContain(`at ${join(project, "src/bad-input.ts")}:4:`);
    expect(output).toContain("4 | await mean.run({ x: [[1, 2, 3]] });");
  });

  test("npm start runs the example program", async () => {
    const { code, output } = await inProject("npm", ["start"]);
    expect(code).toBe(0);
    const accuracy = /accuracy after 20 rounds: ([\d.]+)%/.exec(output);
    expect(accuracy, output).not.toBeNull();
    expect(Number(accuracy![1])).toBeGreaterThan(90);
  });

  test("npm test runs vitest and tsd, and tsd fails when an expected FT error goes away", async () => {
    const passing = await inProject("npm", ["test"]);
    expect(passing.output).toMatch(/Tests\s+1 passed/);
    expect(passing.code).toBe(0);
    // The expectError line holds a SERVER value given to map: broadcast it and tsd must fail.
    const typeTest = join(project, "test-d/round.test-d.ts");
    const original = readFileSync(typeTest, "utf8");
    writeFileSync(typeTest, original.replace("expectError(map((wm, xm) => mul(xm, wm), w, x));", "expectError(map((wm, xm) => mul(xm, wm), broadcast(w), x));"));
    try {
      const failing = await inProject("npx", ["tsd", "--typings", "src/round.ts"]);
      expect(failing.code).not.toBe(0);
      expect(failing.output).toMatch(/Expected an error/);
    } finally {
      writeFileSync(typeTest, original);
    }
  });

  test("npx fedtensor init from the installed package writes a new project, and never over files", async () => {
    const fresh = await inProject("npx", ["fedtensor", "init", "second"]);
    expect(fresh.code).toBe(0);
    expect(JSON.parse(readFileSync(join(project, "second/package.json"), "utf8")).dependencies).toEqual({ fedtensor: `^${JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version}` });
    const again = await inProject("npx", ["fedtensor", "init", "second"]);
    expect(again.code).toBe(2);
    expect(again.output).toContain("exists and is not empty");
  });
});
