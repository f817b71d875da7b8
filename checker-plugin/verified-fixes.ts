/**
 * Quick fixes that are known to work: a candidate fix (codefixes.ts) is applied to a copy of
 * the file in a language service of the plugin's own, over the project's files, and offered
 * only when the fixed file has fewer errors and none that the file did not have before. (What
 * type-checks can still be wrong, as a cast of class labels to float32 is: the candidates'
 * own rules leave such fixes out.) "Fix all FedTensor errors in this file" applies verified
 * fixes one at a time, checking after each, until none is left to apply.
 */
import type ts from "typescript";
import { candidateFixes } from "./codefixes.js";
import { readDiagnostics } from "./diagnostics.js";
import type { PluginOptions } from "./options.js";

export const fixAllId = "fedtensor-fix-all";
const fixAllDescription = "Fix all FedTensor errors in this file";
// Each applied fix removes at least one error, so this bounds only a file of many errors.
const maxFixAllSteps = 100;

/** A file's text with text changes applied (last first, so earlier spans stay valid). */
export function applyChanges(text: string, changes: readonly ts.TextChange[]): string {
  return [...changes]
    .sort((a, b) => b.span.start - a.span.start)
    .reduce((t, c) => t.slice(0, c.span.start) + c.newText + t.slice(c.span.start + c.span.length), text);
}

/** The one change that turns `before` into `after`: the span between their common prefix and suffix. */
function difference(before: string, after: string): ts.TextChange {
  let prefix = 0;
  while (prefix < before.length && prefix < after.length && before[prefix] === after[prefix]) prefix++;
  let suffix = 0;
  while (suffix < before.length - prefix && suffix < after.length - prefix && before[before.length - 1 - suffix] === after[after.length - 1 - suffix]) suffix++;
  return { span: { start: prefix, length: before.length - prefix - suffix }, newText: after.slice(prefix, after.length - suffix) };
}

export class VerifiedFixes {
  private readonly overlay = new Map<string, string>();
  private overlayVersion = 0;
  private readonly service: ts.LanguageService;

  constructor(
    private readonly typescript: typeof ts,
    private readonly host: ts.LanguageServiceHost,
    private readonly options: () => PluginOptions,
  ) {
    // The project's host with the files being tried in place of theirs. Module resolution is
    // TypeScript's default over the host's file system, not tsserver's caches of its project.
    const overlaid: ts.LanguageServiceHost = {
      getCompilationSettings: () => host.getCompilationSettings(),
      getScriptFileNames: () => host.getScriptFileNames(),
      getScriptVersion: (f) => (this.overlay.has(f) ? `fedtensor-try-${this.overlayVersion}` : host.getScriptVersion(f)),
      getScriptSnapshot: (f) => {
        const text = this.overlay.get(f);
        return text === undefined ? host.getScriptSnapshot(f) : typescript.ScriptSnapshot.fromString(text);
      },
      getCurrentDirectory: () => host.getCurrentDirectory(),
      getDefaultLibFileName: (o) => host.getDefaultLibFileName(o),
      fileExists: (f) => host.fileExists?.(f) ?? typescript.sys.fileExists(f),
      readFile: (f, encoding) => host.readFile?.(f, encoding) ?? typescript.sys.readFile(f, encoding),
      readDirectory: (...args) => (host.readDirectory ?? typescript.sys.readDirectory)(...args),
      directoryExists: (d) => host.directoryExists?.(d) ?? typescript.sys.directoryExists(d),
      getDirectories: (d) => host.getDirectories?.(d) ?? typescript.sys.getDirectories(d),
      realpath: (p) => host.realpath?.(p) ?? typescript.sys.realpath?.(p) ?? p,
      useCaseSensitiveFileNames: () => host.useCaseSensitiveFileNames?.() ?? typescript.sys.useCaseSensitiveFileNames,
    };
    this.service = typescript.createLanguageService(overlaid, typescript.createDocumentRegistry());
  }

  /** The verified fixes for the diagnostics over [start, end], each offering "fix all" too. */
  fixesAt(program: ts.Program, fileName: string, start: number, end: number, errorCodes: readonly number[], diagnostics: readonly ts.Diagnostic[]): ts.CodeFixAction[] {
    const candidates = candidateFixes(this.typescript, program, diagnostics, fileName, start, end, errorCodes);
    if (candidates.length === 0) return [];
    const text = this.textOf(fileName);
    try {
      const before = this.errorsWith(fileName, text);
      return candidates
        .filter((fix) => this.resolves(before, fileName, applyChanges(text, fix.changes[0]!.textChanges)))
        .map((fix) => ({ ...fix, fixId: fixAllId, fixAllDescription }));
    } finally {
      // Other files are checked against this one's real text again.
      this.overlay.delete(fileName);
    }
  }

  /** Every FedTensor error of the file that a verified fix resolves, fixed, as one change. */
  fixAll(fileName: string): ts.CombinedCodeActions {
    const original = this.textOf(fileName);
    let text = original;
    try {
      for (let step = 0; step < maxFixAllSteps; step++) {
        const next = this.nextFix(fileName, text);
        if (next === undefined) break;
        text = next;
      }
    } finally {
      this.overlay.delete(fileName);
    }
    return { changes: text === original ? [] : [{ fileName, textChanges: [difference(original, text)] }] };
  }

  /** The text with the first verified fix of its first fixable FedTensor error, or undefined. */
  private nextFix(fileName: string, text: string): string | undefined {
    const before = this.errorsWith(fileName, text);
    const program = this.service.getProgram()!;
    const raw = this.service.getSemanticDiagnostics(fileName);
    const shown = readDiagnostics(this.typescript, program, raw, this.options()).filter((d) => d.messages.length > 0);
    for (const { diagnostic } of shown) {
      const at = diagnostic.start!;
      const candidates = candidateFixes(this.typescript, program, raw, fileName, at, at + diagnostic.length!, [diagnostic.code]);
      for (const fix of candidates) {
        const fixed = applyChanges(text, fix.changes[0]!.textChanges);
        if (this.resolves(before, fileName, fixed)) return fixed;
      }
    }
    return undefined;
  }

  private textOf(fileName: string): string {
    const snapshot = this.host.getScriptSnapshot(fileName);
    return snapshot === undefined ? "" : snapshot.getText(0, snapshot.getLength());
  }

  /**
   * The errors of the file with this text, each as its code and text: an FT error by its FT
   * messages (which name what is wrong, not where), any other by TypeScript's message.
   */
  private errorsWith(fileName: string, text: string): string[] {
    this.overlay.set(fileName, text);
    this.overlayVersion++;
    const { typescript, service } = this;
    const diagnostics = [...service.getSyntacticDiagnostics(fileName), ...service.getSemanticDiagnostics(fileName)];
    return readDiagnostics(typescript, service.getProgram(), diagnostics, this.options())
      .filter(({ diagnostic }) => diagnostic.category === typescript.DiagnosticCategory.Error)
      .map(({ diagnostic, messages }) =>
        messages.length > 0 ? messages.map((m) => m.text).join("\n") : `TS${diagnostic.code}: ${typescript.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`,
      );
  }

  /** Whether the fixed text has fewer errors than `before` and none that `before` lacks. */
  private resolves(before: readonly string[], fileName: string, fixed: string): boolean {
    const after = this.errorsWith(fileName, fixed);
    const left = [...before];
    return after.length < before.length && after.every((e) => left.includes(e) && left.splice(left.indexOf(e), 1).length === 1);
  }
}
