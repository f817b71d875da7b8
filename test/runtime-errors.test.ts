/**
 * The same mistakes made from JavaScript: the runtime checks that run while tracing must fail
 * with the same FT code and the same text as tsc (SPEC sections 3-4: one error catalogue).
 *
 * Each fixture under test/fixtures/type-errors/ exports programs, some with annotated
 * mistakes. This test turns every exported `program(...)` call, and every export holding a
 * mistake, into a function (so that one mistake does not stop the others from being traced),
 * runs each, and holds the error it throws to the annotations inside that export. Exported
 * programs without annotations must trace.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, test } from "vitest";
import { aggregate, atClients, f32, FedTensorError, fori, grad, interpret, jvp, map, mean, program, reduceMean } from "../src/index.js";
import { annotationsOf, type ExpectedError } from "./helpers/annotations.js";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const fixtureDir = join(projectRoot, "test/fixtures/type-errors");
const workDir = mkdtempSync(join(tmpdir(), "fedtensor-runtime-errors-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

interface ExportedProgram {
  readonly name: string;
  readonly firstLine: number;
  readonly lastLine: number;
}

/** The fixture with each exported initializer wrapped in a function, and where each export sits. */
function asThunks(text: string, annotatedLines: readonly number[]): { source: string; exports: ExportedProgram[] } {
  const file = ts.createSourceFile("fixture.ts", text, ts.ScriptTarget.ES2022, true);
  const line = (pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;
  const callsProgram = (e: ts.Expression) => ts.isCallExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === "program";
  const exports: ExportedProgram[] = [];
  const edits: { at: number; insert: string }[] = [];
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement) || !statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const init = declaration.initializer;
      if (init === undefined || !ts.isIdentifier(declaration.name)) continue;
      const [firstLine, lastLine] = [line(statement.getFullStart()), line(statement.end)];
      if (!callsProgram(init) && !annotatedLines.some((l) => l >= firstLine && l <= lastLine)) continue;
      edits.push({ at: init.getStart(), insert: "() => (" }, { at: init.end, insert: ")" });
      exports.push({ name: declaration.name.text, firstLine, lastLine });
    }
  }
  let source = text;
  for (const edit of edits.sort((a, b) => b.at - a.at)) source = source.slice(0, edit.at) + edit.insert + source.slice(edit.at);
  // The copy lives elsewhere: import the library (and the examples whose helpers a fixture misuses) by absolute path.
  source = source.replaceAll('"../../../src/', `"${projectRoot}/src/`).replaceAll('"../../../examples/', `"${projectRoot}/examples/`);
  return { source, exports };
}

const fixtures = readdirSync(fixtureDir).filter((f) => f.endsWith(".ts"));

describe.each(fixtures)("%s traced from JavaScript", (fixture) => {
  const text = readFileSync(join(fixtureDir, fixture), "utf8");
  const annotations = annotationsOf(text);
  const { source, exports } = asThunks(text, annotations.map((a) => a.line));
  const path = join(workDir, fixture);
  writeFileSync(path, source);
  /** What tracing the export must throw: its trace errors where it has any, else what tsc reports. */
  const annotatedIn = (e: ExportedProgram): ExpectedError[] => {
    const inside = annotations.filter((a) => a.line >= e.firstLine && a.line <= e.lastLine);
    const traced = inside.filter((a) => a.by === "trace");
    return traced.length > 0 ? traced : inside;
  };

  test.each(exports.map((e) => [e.name, e] as const))("%s", async (_name, exported) => {
    const module = (await import(path)) as Record<string, () => unknown>;
    const expected = annotatedIn(exported);
    let thrown: unknown;
    try {
      module[exported.name]!();
    } catch (error) {
      thrown = error;
    }
    if (expected.length === 0) {
      expect(thrown).toBeUndefined();
      return;
    }
    expect(thrown).toBeInstanceOf(FedTensorError);
    // Tracing stops at the first mistake, which is one of those tsc reports in this export.
    expect(expected.map((e) => `${e.code}: ${e.message}`)).toContain((thrown as Error).message);
  });
});

/**
 * API misuse from plain JavaScript, where no type checker stands between the user and the
 * library: each gets an FT error that says what to pass, never a bare TypeError from inside.
 */
describe("API misuse from plain JavaScript", () => {
  const clientsMean = program({ x: atClients(f32([3])) }, ({ x }) => reduceMean(map((v) => mean(v), x)));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- deliberately wrong arguments
  const untyped = (f: unknown) => f as (...args: any[]) => any;

  const misuses: readonly [string, () => unknown, string][] = [
    ["interpret() given the program, not its IR", () => untyped(interpret)(clientsMean, { x: [[1, 2, 3]] }), "FT302: interpret() program: got the program itself: pass program.ir"],
    ["interpret() given nothing", () => untyped(interpret)(undefined, {}), "FT302: interpret() program: expected a program's IR (program.ir, or a loaded IR file), got undefined"],
    ["program() with a body that is no function", () => untyped(program)({ x: f32([3]) }, 5), "FT302: program() body: expected a function, got a number"],
    ["map() with a function that is no function", () => program({ x: atClients(f32([3])) }, ({ x }) => untyped(map)(5, x)), "FT302: map() function: expected a function, got a number"],
    ["grad() of a number", () => program({ x: f32([]) }, ({ x }) => untyped(grad)(5)(x)), "FT302: grad() function: expected a function, got a number"],
    ["jvp() of a string", () => program({ x: f32([]) }, ({ x }) => untyped(jvp)("f", [x], [x])), "FT302: jvp() function: expected a function, got a string"],
    ["fori() with a record as body", () => program({ x: f32([]) }, ({ x }) => untyped(fori)(2, x, {})), "FT302: fori() body: expected a function, got a record"],
    ["aggregate() without functions", () => program({ x: atClients(f32([])) }, ({ x }) => untyped(aggregate)(x, { zero: 0 })), "FT302: aggregate() zero: expected a function, got a number"],
    ["a spec shape that is a string", () => untyped(f32)("B"), 'FT302: f32() shape: expected an array of dims, such as ["B", 784], got a string'],
  ];
  test.each(misuses)("%s", (_name, misuse, message) => {
    expect(misuse).toThrow(FedTensorError);
    expect(misuse).toThrow(message);
  });

  test("zero clients: the same code and text from run() and interpret()", async () => {
    const noClients = { x: { shape: [0, 3], data: new Float32Array(0) } };
    const message = "FT302: input x: a cohort has at least one client";
    expect(() => interpret(clientsMean.ir, noClients)).toThrow(message);
    await expect(clientsMean.run(noClients, { backend: "cpu" })).rejects.toThrow(message);
  });
});
