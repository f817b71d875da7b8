/**
 * `fedtensor check [-p tsconfig]`: type-checks a project through the TypeScript compiler API
 * and prints every FT error explained (what went wrong, why, how to fix it, in the words the
 * checker plugin uses) under a code frame, and every other error as tsc prints it.
 * Exit status: 0 no errors, 1 errors, 2 bad usage (no such or an invalid tsconfig).
 */
import { relative, resolve } from "node:path";
import type ts from "typescript";
import { explanationLines, ftMessagesIn } from "../../checker-plugin/explain.js";
import { UsageError, type Command } from "./command.js";

const usage = [
  "usage: fedtensor check [-p <tsconfig.json or folder>]",
  "",
  "  -p, --project   the project to check: a tsconfig.json, or a folder that has one",
  "                  (default: the current folder); `fedtensor check <path>` is the same",
  "",
  "Exit status: 0 no errors, 1 type errors found, 2 bad usage or an invalid tsconfig.",
].join("\n");

/** The project path given on the command line. */
function projectArgument(args: readonly string[]): string {
  const paths: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-p" || arg === "--project") {
      const path = args[++i];
      if (path === undefined) throw new UsageError(`${arg} needs a path`);
      paths.push(path);
    } else if (arg.startsWith("-")) {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      paths.push(arg);
    }
  }
  if (paths.length > 1) throw new UsageError(`expected one project, got ${paths.join(", ")}`);
  return paths[0] ?? ".";
}

async function loadTypeScript(): Promise<typeof ts> {
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

/** A diagnostic as printed: FT errors explained under a code frame, others as tsc does. */
function formatDiagnostic(typescript: typeof ts, diagnostic: ts.Diagnostic): string {
  const where = location(diagnostic);
  const prefix = `${where === undefined ? "" : `${where} - `}${typescript.DiagnosticCategory[diagnostic.category].toLowerCase()}`;
  const messages = ftMessagesIn(diagnostic.messageText);
  if (messages.length === 0) {
    return `${prefix} TS${diagnostic.code}: ${typescript.flattenDiagnosticMessageText(diagnostic.messageText, "\n  ")}`;
  }
  const { file, start, length } = diagnostic;
  const frame = file === undefined || start === undefined ? [] : ["", ...codeFrame(file, start, length ?? 1)];
  const explained = messages.flatMap((message, i) => {
    const [headline, ...explanation] = explanationLines(message);
    return (i === 0 ? explanation : ["", headline!, ...explanation]).map((line) => `  ${line}`);
  });
  return [`${prefix} ${messages[0]!.text}`, ...frame, ...explained].join("\n");
}

/** A path as short as it can be: relative inside the current folder, absolute outside it. */
const shown = (path: string): string => {
  const inside = relative(process.cwd(), path);
  return inside === "" || inside.startsWith("..") ? path : inside;
};

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

export const checkCommand: Command = {
  name: "check",
  summary: "type-check a project and explain every FedTensor error",
  usage,
  async run(args) {
    const project = projectArgument(args);
    const typescript = await loadTypeScript();
    const path = resolve(project);
    const configPath = typescript.sys.directoryExists(path) ? resolve(path, "tsconfig.json") : path;
    if (!typescript.sys.fileExists(configPath)) throw new UsageError(`no tsconfig.json at ${shown(configPath)}`);
    let unreadable: ts.Diagnostic | undefined;
    const config = typescript.getParsedCommandLineOfConfigFile(configPath, undefined, {
      ...typescript.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => (unreadable = d),
    });
    const configErrors = [...(unreadable === undefined ? [] : [unreadable]), ...(config?.errors ?? [])];
    if (config === undefined || configErrors.length > 0) {
      const details = configErrors.map((d) => `  ${formatDiagnostic(typescript, d)}`).join("\n");
      throw new UsageError(`invalid ${shown(configPath)}:\n${details}`);
    }
    const program = typescript.createProgram({ rootNames: config.fileNames, options: config.options, projectReferences: config.projectReferences });
    const diagnostics = typescript.getPreEmitDiagnostics(program);
    for (const diagnostic of diagnostics) console.log(`${formatDiagnostic(typescript, diagnostic)}\n`);
    const errors = diagnostics.filter((d) => d.category === typescript.DiagnosticCategory.Error);
    if (errors.length === 0) {
      console.log(`No errors in ${plural(config.fileNames.length, "file")}.`);
      return 0;
    }
    const fedTensorErrors = errors.filter((d) => ftMessagesIn(d.messageText).length > 0).length;
    const files = new Set(errors.map((d) => d.file?.fileName)).size;
    console.log(
      `Found ${plural(errors.length, "error")} (${fedTensorErrors} FedTensor, ${errors.length - fedTensorErrors} TypeScript) in ${plural(files, "file")}.`,
    );
    return 1;
  },
};
