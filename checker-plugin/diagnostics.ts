/**
 * Explained diagnostics: a diagnostic that reports FT messages gets the catalogue's
 * explanation instead of TypeScript's assignability text (`Argument of type ... is not
 * assignable to parameter of type '"FT101: ..."'`). Its code, span and category stay, so
 * editors still offer the code fixes registered for that code; every other diagnostic passes
 * through unchanged.
 */
import type ts from "typescript";
import { explainedText, ftMessagesIn } from "./explain.js";

/** Shown by editors next to the code, e.g. `fedtensor(2345)`. */
export const diagnosticSource = "fedtensor";

export function explainDiagnostics(diagnostics: readonly ts.Diagnostic[]): ts.Diagnostic[] {
  return diagnostics.map((diagnostic) => {
    const messages = ftMessagesIn(diagnostic.messageText);
    return messages.length === 0 ? diagnostic : { ...diagnostic, messageText: explainedText(messages), source: diagnosticSource };
  });
}
