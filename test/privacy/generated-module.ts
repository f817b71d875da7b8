/**
 * A generated module of programs, checked as the user's editor checks it and traced as the
 * runtime traces it: one ts.Program with the project's compiler options (the module served
 * from memory, so nothing is written into the repository), and the module transpiled and run
 * against the library as the tests import it. The taint matrices (taint-matrix.test.ts,
 * taint-containers.test.ts) hold each generated line to its verdicts in both; the agreement
 * test (agreement.test.ts) holds tsc's verdicts to tracing's.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

export interface Diagnostic {
  readonly line: number;
  readonly code: number;
  readonly text: string;
}

/** The project's compiler options, with the module at `path` served from `source`; `roots` are the other files it needs checked with it. */
export function compileGenerated(path: string, source: string, roots: readonly string[] = []): { program: ts.Program; diagnostics: Diagnostic[] } {
  const config = ts.getParsedCommandLineOfConfigFile(join(projectRoot, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  if (config === undefined) throw new Error("cannot read tsconfig.json");
  const options = { ...config.options, noEmit: true };
  const host = ts.createCompilerHost(options, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = ((exists) => (f: string) => f === path || exists(f))(host.fileExists.bind(host));
  host.readFile = ((read) => (f: string) => (f === path ? source : read(f)))(host.readFile.bind(host));
  host.getSourceFile = (fileName, languageVersion, ...rest) =>
    fileName === path ? ts.createSourceFile(fileName, source, languageVersion, true) : getSourceFile(fileName, languageVersion, ...rest);
  const program = ts.createProgram([path, ...roots], options, host);
  const file = program.getSourceFile(path)!;
  const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)].map((d) => ({
    line: file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
    code: d.code,
    text: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  }));
  return { program, diagnostics };
}

/** The module's exports, transpiled and run with `modules` (import path to module) as what its imports load. */
export function traceable(source: string, modules: Readonly<Record<string, unknown>>): Record<string, () => unknown> {
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const exports: Record<string, () => unknown> = {};
  const load = (path: string): unknown => {
    if (!(path in modules)) throw new Error(`the generated module imports ${path}, which the test does not provide`);
    return modules[path];
  };
  new Function("require", "exports", outputText)(load, exports);
  return exports;
}

/** The FT code (or TSxxxx) a diagnostic reports. */
export const codeOf = (d: Diagnostic): string => /"(FT\d{3}): /.exec(d.text)?.[1] ?? `TS${d.code}`;

/** Every FT code a diagnostic reports (its elaborations included), or its TSxxxx code. */
export function codesOf(d: Diagnostic): string[] {
  const codes = [...d.text.matchAll(/"(FT\d{3}): /g)].map((m) => m[1]!);
  return codes.length > 0 ? [...new Set(codes)] : [`TS${d.code}`];
}
