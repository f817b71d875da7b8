/**
 * FT errors thrown while program(...) traces point at the user's line, as tsc does (issue 24):
 * a user module importing the built package, run by Node and by `fedtensor ir`, prints its own
 * file, line and column with a code frame, and no frame of FedTensor's dist/.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, test } from "vitest";
import { add, atClients, atServer, f32, program } from "../../src/index.js";
import { FedTensorError } from "../../src/errors/error.js";
import { codeFrame, firstUserFrame, isUserFile } from "../../src/errors/source-location.js";

const root = join(import.meta.dirname, "../..");
const distIndex = pathToFileURL(join(root, "dist/src/index.js")).href;
const cli = join(root, "bin/fedtensor.js");
const dir = mkdtempSync(join(tmpdir(), "fedtensor-location-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The bad line of each user module, and the column of the call on it. */
const mistakes = {
  FT104: { line: "  const y = add(w, x); // FT104", call: "add(" },
  FT317: { line: "  const noisy = map((k, xm) => add(uniform(k, [3]), xm), broadcast(w.key), x); // FT317", call: "uniform(" },
  FT312: { line: "  const total = secureSum(x, { bits: 20, key: w.key, range: [0, 1] }); // FT312", call: "secureSum(" },
} as const;

/** Writes a user module whose program's body has `mistake` on its fifth line; returns its path. */
function userModule(code: keyof typeof mistakes): string {
  const file = join(dir, `${code}.mjs`);
  writeFileSync(
    file,
    [
      `import { add, atClients, atServer, broadcast, f32, i32, map, program, secureSum, uniform } from ${JSON.stringify(distIndex)};`,
      "",
      "export const bad = program({ w: { v: atServer(f32([3])), key: atServer(i32([2])) }, x: atClients(f32([3])) }, ({ w, x }) => {",
      "  const v = w.v;",
      mistakes[code].line,
      "  return v;",
      "});",
      "",
    ].join("\n"),
  );
  return file;
}

const internalFrame = /dist[\\/]src[\\/]|[\\/]src[\\/](front|ir|errors)[\\/]/;

describe("an FT error thrown while a program is traced", () => {
  for (const code of Object.keys(mistakes) as (keyof typeof mistakes)[]) {
    test(`${code}: node prints the user's file, line and column with a code frame, and no FedTensor frame`, () => {
      const file = userModule(code);
      const { line, call } = mistakes[code];
      const column = line.indexOf(call) + 1;
      const run = spawnSync(process.execPath, [file], { encoding: "utf8" });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(`FedTensorError: ${code}: `);
      expect(run.stderr).toContain(`at ${file}:5:${column}`);
      expect(run.stderr).toContain(`5 | ${line}`);
      expect(run.stderr).toContain(`  | ${" ".repeat(column - 1)}^`);
      expect(run.stderr).not.toMatch(internalFrame);
    });
  }

  test("`fedtensor ir` prints the location and code frame, the why and fix, and no stack (exit 1)", () => {
    const file = userModule("FT104");
    const run = spawnSync(process.execPath, [cli, "ir", file], { encoding: "utf8" });
    expect(run.status).toBe(1);
    const column = mistakes.FT104.line.indexOf("add(") + 1;
    expect(run.stderr).toContain(`fedtensor ir: FT104: add() mixes f32[3]@SERVER with {f32[3]}@CLIENTS`);
    expect(run.stderr).toContain(`\n  at ${file}:5:${column}\n    5 | ${mistakes.FT104.line}\n`);
    expect(run.stderr).toContain("\n  why: ");
    // The location is the one "at" line: no frame of any file follows it.
    expect(run.stderr.match(/^\s+at /gm)).toHaveLength(1);
    expect(run.stderr).not.toMatch(internalFrame);
  });

  test("a TypeScript module run with source maps on points at its .ts line, not at FedTensor's src/", () => {
    const source = [
      "type Note = string; // a type, so the .ts and .js lines differ",
      `import { add, atClients, atServer, f32, program } from ${JSON.stringify(distIndex)};`,
      "",
      "export const bad = program({ w: atServer(f32([3])), x: atClients(f32([3])) }, ({ w, x }) => {",
      '  const note: Note = "mixing";',
      "  return add(w, x as never);",
      "});",
      "",
    ].join("\n");
    const tsFile = join(dir, "typed.ts");
    writeFileSync(tsFile, source);
    const { outputText, sourceMapText } = ts.transpileModule(source, {
      fileName: "typed.ts",
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: true },
    });
    writeFileSync(join(dir, "typed.mjs"), outputText.replace("typed.js.map", "typed.mjs.map"));
    writeFileSync(join(dir, "typed.mjs.map"), sourceMapText!.replace("typed.js", "typed.mjs"));
    const run = spawnSync(process.execPath, ["--enable-source-maps", join(dir, "typed.mjs")], { encoding: "utf8" });
    expect(run.stderr).toContain(`at ${tsFile}:6:10\n    6 |   return add(w, x as never);`);
    expect(run.stderr).not.toMatch(internalFrame);
  });

  test("in process, the error's location is the test's own line; its message is the catalogue's", () => {
    const source = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
    let caught: unknown;
    try {
      program({ w: atServer(f32([3])), x: atClients(f32([3])) }, ({ w, x }) => add(w, x as never)); // the bad line
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FedTensorError);
    const error = caught as FedTensorError;
    expect(error.message).toBe("FT104: add() mixes f32[3]@SERVER with {f32[3]}@CLIENTS: broadcast the SERVER value or reduce the CLIENTS one");
    expect(error.location?.file).toBe(fileURLToPath(import.meta.url));
    expect(source[error.location!.line - 1]).toContain("// the bad line");
    expect(error.location?.text).toContain("| ");
    expect(error.stack).not.toMatch(internalFrame);
  });
});

describe("finding the user's frame", () => {
  const dirs = ["/pkg/dist/src/", "/pkg/dist/types/"];
  const stack = [
    "FedTensorError: FT104: ...",
    "    at ftError (file:///pkg/dist/src/errors/error.js:35:12)",
    "    at Object.infer (/pkg/dist/types/x.js:1:2)",
    "    at emit (file:///app/node_modules/other/index.js:3:4)",
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "    at async helper (file:///app/src/model.mjs:12:7)",
    "    at file:///app/main.mjs:3:20",
  ].join("\n");

  test("skips FedTensor's folders, other packages and Node's internals", () => {
    expect(firstUserFrame(stack, dirs)).toMatchObject({ file: "/app/src/model.mjs", line: 12, column: 7 });
    expect(isUserFile("/pkg/dist/examples/fedavg.js", dirs)).toBe(true);
    expect(firstUserFrame(stack.split("\n").slice(0, 5).join("\n"), dirs)).toBeUndefined();
  });

  test("the code frame puts the caret under the column, keeping tabs", () => {
    expect(codeFrame("first\n\tconst y = add(w, x);\n", 2, 12)).toBe("  2 | \tconst y = add(w, x);\n    | \t          ^");
    expect(codeFrame("one line", 3, 1)).toBeUndefined();
  });
});
