/**
 * Hover: over a FedTensor value (a tensor, a spec, or a tree of them) the placement and shape
 * in the notation of SPEC section 1, over a program its signature. TypeScript's own text
 * stays; the FedTensor line comes first in the documentation.
 */
import type ts from "typescript";
import { innermostNodeAt } from "./nodes.js";
import { printTypeTree, programSignature, typeTree, unknownResult } from "./value-types.js";

/** The FedTensor hover line for a type, or undefined when it is no FedTensor value. */
export function fedTensorHover(checker: ts.TypeChecker, type: ts.Type): string | undefined {
  const signature = programSignature(checker, type);
  if (signature?.endsWith(` -> ${unknownResult})`)) return `FedTensor program: \`${signature}\` (its body has type errors, so its result is unknown)`;
  if (signature !== undefined) return `FedTensor program: \`${signature}\``;
  const tree = typeTree(checker, type);
  // Code spans, because editors render hover documentation as markdown and `<w=...>` could read as HTML.
  return tree === undefined ? undefined : `FedTensor: \`${printTypeTree(tree)}\``;
}

export function addFedTensorHover(
  typescript: typeof ts,
  program: ts.Program | undefined,
  quickInfo: ts.QuickInfo | undefined,
  fileName: string,
): ts.QuickInfo | undefined {
  const file = program?.getSourceFile(fileName);
  if (quickInfo === undefined || program === undefined || file === undefined) return quickInfo;
  const checker = program.getTypeChecker();
  const node = innermostNodeAt(typescript, file, quickInfo.textSpan.start);
  const hover = fedTensorHover(checker, checker.getTypeAtLocation(node));
  if (hover === undefined) return quickInfo;
  const documentation = quickInfo.documentation ?? [];
  const separator: ts.SymbolDisplayPart[] = documentation.length > 0 ? [{ kind: "lineBreak", text: "\n\n" }] : [];
  return { ...quickInfo, documentation: [{ kind: "text", text: hover }, ...separator, ...documentation] };
}
