/**
 * The FT messages as tsc prints them. tsd (test-d/) proves that each mistake fails and each
 * fix passes, but cannot see the text; this test compiles the fixtures under
 * test/fixtures/type-errors/ (one per FT code with a type-level check) with the project's
 * compiler options and holds every diagnostic to the annotations on the lines above it:
 *
 *     // error: FT101: broadcast() takes a SERVER value, got {f32[B,784]}@CLIENTS
 *     const everywhere = broadcast(images);
 *
 * Each annotated text must be an instance of the catalogue's template for the code; the FT
 * messages of the diagnostics on a line must be exactly the ones annotated above it (a check
 * that fails for several leaves of a tree lists them all); other lines must have none.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { catalogue, type ErrorCode } from "../src/errors/catalogue.js";
import { annotationsOf, type ExpectedError } from "./helpers/annotations.js";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const fixtureDir = join(projectRoot, "test/fixtures/type-errors");

/** The codes checked at type level: SPEC sections 3-4, and trees, weights and loop carries. */
const typeLevelCodes: readonly ErrorCode[] = [
  "FT101",
  "FT102",
  "FT103",
  "FT104",
  "FT105",
  "FT106",
  "FT107",
  "FT109",
  "FT110",
  "FT115",
  "FT116",
  "FT117",
  "FT201",
  "FT202",
  "FT203",
  "FT204",
  "FT205",
  "FT206",
  "FT207",
  "FT208",
  "FT209",
  "FT212",
  "FT213",
  "FT302",
  "FT312",
  "FT316",
];

interface Fixture {
  readonly code: ErrorCode;
  readonly path: string;
  readonly expected: readonly ExpectedError[];
}

interface FoundError {
  readonly line: number;
  readonly text: string;
}

/** An FT message inside a diagnostic, where tsc quotes the string literal parameter type. */
const quotedMessage = /"(FT\d{3}: [^"]*)"/g;


/**
 * Fixtures are named after their code: ft101-broadcast.ts holds FT101 mistakes (a code may
 * have several, such as ft104-tree-leaves.ts).
 */
function readFixtures(): Fixture[] {
  return readdirSync(fixtureDir)
    .filter((name) => name.endsWith(".ts"))
    .sort()
    .map((name) => {
      const code = `FT${name.slice(2, 5)}` as ErrorCode;
      const path = join(fixtureDir, name);
      return { code, path, expected: annotationsOf(readFileSync(path, "utf8")).filter((e) => e.by === "tsc") };
    });
}

/** A pattern that matches exactly the messages a catalogue template can produce. */
function templatePattern(code: ErrorCode): RegExp {
  const parts = catalogue[code].message.split(/\{\w+\}/);
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${parts.map(escape).join(".+")}$`);
}

/** Compiles all fixtures in one program, as tsc would with the project's tsconfig.json. */
function compile(paths: readonly string[]): Map<string, FoundError[]> {
  const configPath = join(projectRoot, "tsconfig.json");
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (config === undefined) throw new Error(`cannot read ${configPath}`);
  const program = ts.createProgram(paths, { ...config.options, noEmit: true });
  const found = new Map<string, FoundError[]>();
  for (const path of paths) {
    const source = program.getSourceFile(path);
    if (source === undefined) throw new Error(`${path} is not in the program`);
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    found.set(
      path,
      diagnostics.map((d) => ({
        line: source.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
        text: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
      })),
    );
  }
  return found;
}

const fixtures = readFixtures();
let found: Map<string, FoundError[]>;

beforeAll(() => {
  found = compile(fixtures.map((f) => f.path));
});

it("has a fixture for every code with a type-level check", () => {
  expect([...new Set(fixtures.map((f) => f.code))]).toEqual(typeLevelCodes);
});

describe.each(fixtures.map((f) => [f.code, f] as const))("%s", (code, { path, expected }) => {
  const mistakeLines = new Set(expected.map((e) => e.line));

  it("annotates at least two mistakes, all of its own code", () => {
    expect(mistakeLines.size).toBeGreaterThanOrEqual(2);
    for (const e of expected) expect(e.code).toBe(code);
  });

  it("annotates messages that the catalogue template produces", () => {
    for (const e of expected) expect(e.message).toMatch(templatePattern(code));
  });

  it("reports exactly the annotated messages on the line below them", () => {
    const errors = found.get(path)!;
    for (const line of mistakeLines) {
      const want = expected.filter((e) => e.line === line).map((e) => `${e.code}: ${e.message}`);
      const got = errors
        .filter((f) => f.line === line)
        // Once per diagnostic: tsc's elaboration may quote the same target type twice (grad's FT209).
        .flatMap((f) => [...new Set([...f.text.matchAll(quotedMessage)].map((m) => m[1]!))]);
      expect(got.sort(), `line ${line}`).toEqual(want.sort());
    }
  });

  // One mistake, one diagnostic: a check that fails for several leaves of a tree names them
  // all in one, and a failed operation's result raises nothing more where it is used.
  it("reports one diagnostic for each mistake", () => {
    for (const line of mistakeLines) expect(found.get(path)!.filter((f) => f.line === line), `line ${line}`).toHaveLength(1);
  });

  it("reports nothing else: the corrected programs type-check", () => {
    const unexpected = found.get(path)!.filter((f) => !mistakeLines.has(f.line) || !f.text.match(quotedMessage));
    expect(unexpected).toEqual([]);
  });
});
