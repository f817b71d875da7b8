/**
 * `fedtensor check [-p tsconfig] [--doctor]`: type-checks a project through the TypeScript
 * compiler API and prints every FT error explained (what went wrong, why, how to fix it, in the
 * words the checker plugin uses, with the plugin's options and suppression comments applied)
 * under a code frame, and every other error as tsc prints it. `--doctor` says instead whether
 * an editor's tsserver would load the checker plugin for this project, and why not.
 * Exit status: 0 no errors, 1 errors, 2 bad usage (no such, or an invalid, tsconfig).
 */
import { relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import type ts from "typescript";
import { budgetDiagnostics } from "../../checker-plugin/budget.js";
import { readDiagnostics, type ReadDiagnostic } from "../../checker-plugin/diagnostics.js";
import { explanationLines } from "../../checker-plugin/explain.js";
import { defaultOptions, pluginEntry, pluginName, readOptions, type PluginOptions } from "../../checker-plugin/options.js";
import { ftError } from "../errors/error.js";
import { shown, UsageError, type Command } from "./command.js";
import { doctor } from "./doctor.js";

const usage = [
  "usage: fedtensor check [-p <tsconfig.json or folder>] [--doctor]",
  "",
  "  -p, --project   the project to check: a tsconfig.json, or a folder that has one",
  "                  (default: the current folder); `fedtensor check <path>` and",
  "                  `--project=<path>` are the same",
  "  --doctor        say whether an editor would load the checker plugin for the project,",
  "                  and if not, why and what to change",
  "",
  "Exit status: 0 no errors, 1 type errors found (--doctor: the plugin would not load),",
  "2 bad usage or an invalid tsconfig.",
].join("\n");

/** The command line: the project path, and whether to run the doctor. */
function readArguments(args: readonly string[]): { project: string; doctor: boolean } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { project: { type: "string", short: "p", multiple: true }, doctor: { type: "boolean" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const unknown = /^Unknown option '([^']+)'/.exec((error as Error).message);
    if (unknown !== null) throw new UsageError(`unknown option ${unknown[1]}`);
    throw new UsageError(/argument missing/.test((error as Error).message) ? "-p/--project needs a path" : (error as Error).message);
  }
  const paths = [...(parsed.values.project ?? []), ...parsed.positionals];
  if (paths.length > 1) throw new UsageError(`expected one project, got ${paths.join(", ")}`);
  return { project: paths[0] ?? ".", doctor: parsed.values.doctor === true };
}

export async function loadTypeScript(): Promise<typeof ts> {
  try {
    return (await import("typescript")).default;
  } catch {
    throw new UsageError("the typescript package is not installed; run npm install --save-dev typescript@5.9");
  }
}

/** `file:line:col`, relative to the current folder, or undefined for a diagnostic without a file. */
function location(diagnostic: ts.Diagnostic): string | undefined {
  if (diagnostic.file === undefined || diagnostic.start === undefined) return undefined;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `${relative(process.cwd(), diagnostic.file.fileName)}:${line + 1}:${character + 1}`;
}

/** The source line of a diagnostic's start and a caret line under its span (on that line). */
function codeFrame(file: ts.SourceFile, start: number, length: number): string[] {
  const { line, character } = file.getLineAndCharacterOfPosition(start);
  const lineStart = start - character;
  const lineEnd = file.getLineEndOfPosition(start);
  const source = file.text.slice(lineStart, lineEnd).replace(/\r$/, "");
  const number = String(line + 1);
  // Tabs stay tabs under the source so that the caret lines up however they are shown.
  const indent = source.slice(0, character).replace(/[^\t]/g, " ");
  const carets = "^".repeat(Math.max(1, Math.min(length, source.length - character)));
  return [`  ${number} | ${source}`, `  ${" ".repeat(number.length)} | ${indent}${carets}`];
}

/**
 * A diagnostic as printed: FT errors explained under a code frame (every failing leaf of a tree
 * named, the explanation once per code), others as tsc does.
 */
export function formatDiagnostic(typescript: typeof ts, { diagnostic, messages }: ReadDiagnostic, options: PluginOptions): string {
  const where = location(diagnostic);
  const prefix = `${where === undefined ? "" : `${where} - `}${typescript.DiagnosticCategory[diagnostic.category].toLowerCase()}`;
  if (messages.length === 0) {
    return `${prefix} TS${diagnostic.code}: ${typescript.flattenDiagnosticMessageText(diagnostic.messageText, "\n  ")}`;
  }
  const { file, start, length } = diagnostic;
  const frame = file === undefined || start === undefined ? [] : ["", ...codeFrame(file, start, length ?? 1)];
  const [headline, ...explained] = explanationLines(messages, options.explanation);
  return [`${prefix} ${headline}`, ...frame, ...explained.map((line) => (line === "" ? "" : `  ${line}`))].join("\n");
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/**
 * The project's parsed tsconfig, or a usage error with TypeScript's own errors for a file it
 * cannot read: a missing file, a syntax error (a missing comma or brace), an unknown option.
 */
export function readProject(typescript: typeof ts, project: string): { configPath: string; config: ts.ParsedCommandLine } {
  const path = resolve(project);
  const configPath = typescript.sys.directoryExists(path) ? resolve(path, "tsconfig.json") : path;
  if (!typescript.sys.fileExists(configPath)) throw new UsageError(`no tsconfig.json at ${shown(configPath)}`);
  let unreadable: ts.Diagnostic | undefined;
  const config = typescript.getParsedCommandLineOfConfigFile(configPath, undefined, {
    ...typescript.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => (unreadable = d),
  });
  // Syntax errors live on the parsed JSON file, not among config.errors.
  const configErrors = [...(unreadable === undefined ? [] : [unreadable]), ...(config === undefined ? [] : typescript.getConfigFileParsingDiagnostics(config))];
  if (config === undefined || configErrors.length > 0) {
    const details = configErrors.map((d) => `  ${formatDiagnostic(typescript, { diagnostic: d, messages: [] }, defaultOptions)}`).join("\n");
    throw new UsageError(`invalid ${shown(configPath)}:\n${details}`);
  }
  return { configPath, config };
}

/** The plugin's options from the tsconfig entry; an invalid one is FT305, as bad usage. */
export function pluginOptions(config: ts.ParsedCommandLine, configPath: string): PluginOptions {
  const { options, problems } = readOptions(pluginEntry(config.options));
  const [problem] = problems;
  if (problem !== undefined) throw ftError("FT305", { option: `${pluginName} option ${problem.option} in ${shown(configPath)}`, why: problem.why });
  return options;
}

export const checkCommand: Command = {
  name: "check",
  summary: "type-check a project and explain every FedTensor error",
  usage,
  async run(args) {
    const { project, doctor: runDoctor } = readArguments(args);
    const typescript = await loadTypeScript();
    const { configPath, config } = readProject(typescript, project);
    if (runDoctor) return doctor(typescript, configPath, config);
    const options = pluginOptions(config, configPath);
    const program = typescript.createProgram({ rootNames: config.fileNames, options: config.options, projectReferences: config.projectReferences });
    // Each program's declared privacy budget against its literal releases (FT362), as the plugin reports it.
    const budgets = program.getSourceFiles().flatMap((file) => (program.isSourceFileFromExternalLibrary(file) ? [] : budgetDiagnostics(typescript, program, file.fileName)));
    const diagnostics = readDiagnostics(typescript, program, [...typescript.getPreEmitDiagnostics(program), ...budgets], options);
    for (const diagnostic of diagnostics) console.log(`${formatDiagnostic(typescript, diagnostic, options)}\n`);
    const errors = diagnostics.filter((d) => d.diagnostic.category === typescript.DiagnosticCategory.Error);
    if (errors.length === 0) {
      console.log(`No errors in ${plural(config.fileNames.length, "file")}.`);
      return 0;
    }
    const fedTensorErrors = errors.filter((d) => d.messages.length > 0).length;
    const files = new Set(errors.map((d) => d.diagnostic.file?.fileName)).size;
    console.log(
      `Found ${plural(errors.length, "error")} (${fedTensorErrors} FedTensor, ${errors.length - fedTensorErrors} TypeScript) in ${plural(files, "file")}.`,
    );
    return 1;
  },
};
