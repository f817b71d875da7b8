/**
 * Checking and running a generated module of FedTensor programs, as the agreement test
 * (test/privacy/agreement.test.ts) does: one ts.Program with the project's compiler options and
 * the module served from memory, its diagnostics by line, and the module transpiled and run
 * against the library as the tests import it, each export a function that traces one program.
 */
import ts from "typescript";
import * as ft from "../../src/index.js";
import * as lib from "../../src/lib/index.js";

export interface LineDiagnostic {
  readonly line: number;
  readonly code: number;
  readonly text: string;
}

/** The diagnostics of `source`, type-checked as `path` inside the project at `projectRoot`. */
export function checkGenerated(projectRoot: string, path: string, source: string): LineDiagnostic[] {
  const config = ts.getParsedCommandLineOfConfigFile(`${projectRoot}/tsconfig.json`, {}, {
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
  const program = ts.createProgram([path], options, host);
  const file = program.getSourceFile(path)!;
  return [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)].map((d) => ({
    line: file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
    code: d.code,
    text: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  }));
}

/** The FT codes a diagnostic reports (every quoted message, elaborations included), or its TSxxxx code. */
export function codesOf(d: LineDiagnostic): string[] {
  const codes = [...d.text.matchAll(/"(FT\d{3}): /g)].map((m) => m[1]!);
  return codes.length > 0 ? [...new Set(codes)] : [`TS${d.code}`];
}

/** The module's exports, transpiled to CommonJS with `ft` the library and `lib` its model library. */
export function runnable(source: string): Record<string, () => unknown> {
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const exports: Record<string, () => unknown> = {};
  const modules: Record<string, unknown> = { ft, lib };
  new Function("require", "exports", outputText)((specifier: string) => (specifier.endsWith("/lib/index.js") ? modules.lib : modules.ft), exports);
  return exports;
}
