/**
 * The FT messages of a diagnostic, every one. A check over a tree fails with one message per
 * failing leaf, and the parameter's type is the union of them; tsc prints that union in the
 * diagnostic's text cut short (`"FT104: ... at w.b" | "FT104: ... re...`), so the text alone
 * loses leaves. The checker still has the whole union: it is the type expected at the node
 * the diagnostic points at. The text is the fallback where the checker has no such type.
 */
import type ts from "typescript";
import { ftMessageOf, ftMessagesIn, mentionsFtMessage, type FtMessage } from "./explain.js";
import { nodeWithSpan } from "./nodes.js";

/** The FT messages among the string literal types of the type expected at the diagnostic's node. */
function expectedMessages(typescript: typeof ts, checker: ts.TypeChecker, diagnostic: ts.Diagnostic): FtMessage[] {
  const { file, start, length } = diagnostic;
  if (file === undefined || start === undefined || length === undefined) return [];
  const node = nodeWithSpan(typescript, file, start, length);
  if (node === undefined || !typescript.isExpression(node)) return [];
  const expected = checker.getContextualType(node);
  if (expected === undefined) return [];
  const members = expected.isUnion() ? expected.types : [expected];
  return members.flatMap((t) => (t.isStringLiteral() ? [ftMessageOf(t.value)].filter((m) => m !== undefined) : []));
}

/** The FT messages a diagnostic reports, each once, in tsc's order; empty for other diagnostics. */
export function ftMessagesOf(typescript: typeof ts, program: ts.Program | undefined, diagnostic: ts.Diagnostic): FtMessage[] {
  if (!mentionsFtMessage(diagnostic.messageText)) return [];
  const printed = ftMessagesIn(diagnostic.messageText);
  const expected = program === undefined ? [] : expectedMessages(typescript, program.getTypeChecker(), diagnostic);
  // The expected type has them all unless the diagnostic is about some other node's type.
  const complete = printed.every((p) => expected.some((e) => e.text === p.text));
  return complete && expected.length > 0 ? [...new Map(expected.map((m) => [m.text, m])).values()] : printed;
}
