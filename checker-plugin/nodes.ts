/** Finding the syntax nodes that diagnostics and hover positions point at. */
import type ts from "typescript";

/** The deepest node whose text (trivia excluded) contains position. */
export function innermostNodeAt(typescript: typeof ts, file: ts.SourceFile, position: number): ts.Node {
  let found: ts.Node = file;
  const visit = (node: ts.Node): void => {
    if (node.getStart(file) <= position && position < node.getEnd()) {
      found = node;
      typescript.forEachChild(node, visit);
    }
  };
  typescript.forEachChild(file, visit);
  return found;
}

/** The outermost node spanning exactly [start, start + length), as a diagnostic reports it. */
export function nodeWithSpan(typescript: typeof ts, file: ts.SourceFile, start: number, length: number): ts.Node | undefined {
  const end = start + length;
  let found: ts.Node | undefined;
  const visit = (node: ts.Node): void => {
    if (found !== undefined || node.getStart(file) > start || node.getEnd() < end) return;
    if (node.getStart(file) === start && node.getEnd() === end) found = node;
    else typescript.forEachChild(node, visit);
  };
  typescript.forEachChild(file, visit);
  return found;
}
