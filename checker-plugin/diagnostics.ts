/**
 * FedTensor diagnostics: a diagnostic that reports FT messages gets the catalogue's
 * explanation instead of TypeScript's assignability text (`Argument of type ... is not
 * assignable to parameter of type '"FT101: ..."'`), starting with the FT code so it can be
 * searched; every failing leaf of a tree is named (messages.ts). Suppression comments and the
 * severity options apply. Its code and span stay, so editors still offer the code fixes
 * registered for that code; every other diagnostic passes through unchanged. The plugin and
 * `fedtensor check` both read diagnostics through here.
 */
import type ts from "typescript";
import { explainedText, type FtMessage } from "./explain.js";
import { ftMessagesOf } from "./messages.js";
import type { PluginOptions, Severity } from "./options.js";
import { isSuppressed } from "./suppression.js";

/** Shown by editors next to the code, e.g. `fedtensor(2345)`. */
export const diagnosticSource = "fedtensor";

/** A diagnostic with the FT messages it still reports (none for other diagnostics). */
export interface ReadDiagnostic {
  readonly diagnostic: ts.Diagnostic;
  readonly messages: readonly FtMessage[];
}

const severityOrder: readonly Severity[] = ["error", "warning", "suggestion", "message"];

/**
 * The diagnostics with their FT messages, less the messages that a suppression comment or an
 * `off` severity hides, and less the diagnostics left without any; the category of one with
 * FT messages is the most severe of its codes' severities.
 */
export function readDiagnostics(
  typescript: typeof ts,
  program: ts.Program | undefined,
  diagnostics: readonly ts.Diagnostic[],
  options: PluginOptions,
): ReadDiagnostic[] {
  const categories: { readonly [S in Severity]?: ts.DiagnosticCategory } = {
    error: typescript.DiagnosticCategory.Error,
    warning: typescript.DiagnosticCategory.Warning,
    suggestion: typescript.DiagnosticCategory.Suggestion,
    message: typescript.DiagnosticCategory.Message,
  };
  return diagnostics.flatMap((diagnostic) => {
    const all = ftMessagesOf(typescript, program, diagnostic);
    if (all.length === 0) return [{ diagnostic, messages: [] }];
    const { file, start } = diagnostic;
    const messages = all.filter(
      (m) => options.severity[m.code] !== "off" && !(file !== undefined && start !== undefined && isSuppressed(file, start, m.code)),
    );
    if (messages.length === 0) return [];
    const levels = messages.map((m) => options.severity[m.code] ?? "error");
    const level = severityOrder.find((s) => levels.includes(s))!;
    return [{ diagnostic: { ...diagnostic, category: categories[level]! }, messages }];
  });
}

export function explainDiagnostics(
  typescript: typeof ts,
  program: ts.Program | undefined,
  diagnostics: readonly ts.Diagnostic[],
  options: PluginOptions,
): ts.Diagnostic[] {
  return readDiagnostics(typescript, program, diagnostics, options).map(({ diagnostic, messages }) =>
    messages.length === 0 ? diagnostic : { ...diagnostic, messageText: explainedText(messages, options.explanation), source: diagnosticSource },
  );
}
