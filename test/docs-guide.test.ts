/**
 * docs/guide.md is held to the library: every ```ts block is type-checked under strict (no
 * skipLibCheck) against the built package, imported by its name "fedtensor" as a user's code
 * imports it, and the runnable blocks are run with node; a block marked ```ts error FTnnn must
 * fail tsc, each of its diagnostics carrying that code. Its reference tables name every export
 * of src/index.ts and every value the library exports from its algorithms, models, optimizers
 * and privacy modules (rows for names not exported are allowed: they document exports that
 * other branches add or move).
 *
 * Needs dist/ (`npm run build`), as `npm test` builds first.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, expect, test } from "vitest";
import { deadline } from "./helpers/deadline.js";

const root = join(import.meta.dirname, "..");
const guide = readFileSync(join(root, "docs/guide.md"), "utf8");

interface Block {
  code: string;
  /** The FT code a block that shows a mistake must fail tsc with. */
  error?: string;
  line: number;
}

function codeBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```ts( error (FT\d{3}))?\n([\s\S]*?)^```$/gm)].map((match) => ({
    code: match[3]!,
    ...(match[2] === undefined ? {} : { error: match[2] }),
    line: markdown.slice(0, match.index).split("\n").length,
  }));
}

/** A folder where "fedtensor" resolves to this checkout, as it does for a project that installed it. */
function userProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "fedtensor-guide-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules/fedtensor"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  return dir;
}

const strictOptions = (dir: string): ts.CompilerOptions => ({
  strict: true,
  noUncheckedIndexedAccess: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  // ES2022 and the DOM: what tsc includes by default, and what tfjs-core's declarations name.
  lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
  types: ["node"],
  typeRoots: [join(root, "node_modules/@types")],
  rootDir: dir,
  outDir: join(dir, "out"),
});

const text = (diagnostic: ts.Diagnostic): string => {
  const where = diagnostic.file === undefined ? "" : `${diagnostic.file.fileName}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}: `;
  return where + ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
};

test("docs/guide.md's code blocks type-check under strict, run, and its error blocks fail with their FT code", { timeout: deadline(240_000) }, async () => {
  const blocks = codeBlocks(guide);
  const runnable = blocks.filter((block) => block.error === undefined);
  const mistakes = blocks.filter((block) => block.error !== undefined);
  expect(runnable.length).toBeGreaterThanOrEqual(5);
  expect(mistakes.length).toBeGreaterThanOrEqual(1);

  // The blocks import the package as a user does: its exports point at dist/.
  expect(existsSync(join(root, "dist/src/index.d.ts")), "dist/ is missing: run `npm run build` first").toBe(true);
  const dir = userProject();
  // The runnable blocks are one module, in order: a later block continues an earlier one.
  const main = join(dir, "guide.ts");
  writeFileSync(main, runnable.map((block) => `// docs/guide.md line ${block.line}\n${block.code}`).join("\n"));
  const mistakeFiles = mistakes.map((block, i) => {
    const path = join(dir, `mistake-${i}.ts`);
    writeFileSync(path, block.code);
    return { path, block };
  });
  const program = ts.createProgram([main, ...mistakeFiles.map((file) => file.path)], strictOptions(dir));
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const inFile = (path: string) => diagnostics.filter((d) => d.file?.fileName === path.split(sep).join("/"));
  // Nothing outside the user's files fails: the package's own declarations pass without skipLibCheck.
  const mistakePaths = new Set(mistakeFiles.map((file) => file.path.split(sep).join("/")));
  expect(diagnostics.filter((d) => d.file === undefined || !mistakePaths.has(d.file.fileName)).map(text)).toEqual([]);
  for (const { path, block } of mistakeFiles) {
    const found = inFile(path).map(text);
    expect(found.length, `the block at docs/guide.md line ${block.line} type-checks, but is marked ${block.error}`).toBeGreaterThan(0);
    for (const message of found) expect(message, `docs/guide.md line ${block.line}`).toContain(`${block.error}:`);
  }

  const emitted = program.emit(program.getSourceFile(main));
  expect(emitted.emitSkipped).toBe(false);
  const script = join(dir, "out", relative(dir, main).replace(/\.ts$/, ".js"));
  const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: dir, timeout: deadline(180_000) });
  // The guide's last block prints this when everything before it ran.
  expect(stdout).toContain("guide: done");
});

/** The names a module exports (values and types), each with the file that declares it. */
function exportsOf(program: ts.Program, path: string): Map<string, string> {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path)!;
  const names = new Map<string, string>();
  for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(source)!)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const declared = symbol.declarations?.[0]?.getSourceFile().fileName ?? path;
    names.set(exported.name, `${declared}${symbol.flags & ts.SymbolFlags.Value ? "" : " (type)"}`);
  }
  return names;
}

/** The names in the first cell of each row of the tables under a heading of the guide. */
function tableNames(heading: string): Set<string> {
  const start = guide.indexOf(`\n## ${heading}\n`);
  expect(start, `docs/guide.md has a section "## ${heading}"`).toBeGreaterThan(0);
  const end = guide.indexOf("\n## ", start + 1);
  const section = guide.slice(start, end < 0 ? undefined : end);
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1];
    if (first === undefined) continue;
    for (const [, name] of first.matchAll(/`([A-Za-z_$][\w$]*)`/g)) names.add(name!);
  }
  return names;
}

test("docs/guide.md's reference has a row for every export of the main entry and of the library's rounds, models, optimizers and privacy", () => {
  const main = join(root, "src/index.ts").split(sep).join("/");
  const lib = join(root, "src/lib/index.ts").split(sep).join("/");
  const program = ts.createProgram([main, lib], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, noEmit: true });
  const mainExports = exportsOf(program, main);
  const libExports = exportsOf(program, lib);
  const libFolders = ["algorithms", "models", "optimizers", "privacy"].map((folder) => `${root.split(sep).join("/")}/src/lib/${folder}/`);
  const libRequired = [...libExports].filter(([, file]) => !file.endsWith("(type)") && libFolders.some((folder) => file.startsWith(folder))).map(([name]) => name);
  expect(libRequired).toContain("fedAvgProgram");

  const mainRows = tableNames("Reference: the language (fedtensor)");
  const libRows = tableNames("Reference: the library (fedtensor/lib)");
  const missingMain = [...mainExports.keys()].filter((name) => !mainRows.has(name));
  const missingLib = libRequired.filter((name) => !libRows.has(name));
  expect(missingMain, "exports of src/index.ts without a row in docs/guide.md's reference").toEqual([]);
  expect(missingLib, "exports of src/lib/index.ts without a row in docs/guide.md's library reference").toEqual([]);
});
