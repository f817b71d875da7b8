/**
 * The per-line suppression comment, for a FedTensor error the user accepts:
 *
 *   // fedtensor-ignore FT104 FT201     (on the line above, or at the end of the line itself)
 *
 * It hides the listed FT codes (every FT code when it lists none) on that line in the editor
 * and in `fedtensor check`. Plain tsc does not read it: there, `// @ts-expect-error` is the
 * suppression, and it hides the plugin's diagnostic too.
 */
import type ts from "typescript";
import type { ErrorCode } from "../src/errors/catalogue.js";

const directive = /\/\/\s*fedtensor-ignore\b(.*)$/;

/** The codes a directive on this line of text names: "all", a list, or undefined when there is none. */
function directiveCodes(line: string): "all" | Set<string> | undefined {
  const match = directive.exec(line);
  if (match === null) return undefined;
  const codes = match[1]!.match(/\bFT\d{3}\b/g);
  return codes === null ? "all" : new Set(codes);
}

/** Whether a suppression comment hides FT code `code` at `position` of the file. */
export function isSuppressed(file: ts.SourceFile, position: number, code: ErrorCode): boolean {
  const { line } = file.getLineAndCharacterOfPosition(position);
  const lineText = (n: number): string => {
    const starts = file.getLineStarts();
    return n < 0 ? "" : file.text.slice(starts[n], starts[n + 1] ?? file.text.length);
  };
  const previous = lineText(line - 1);
  // The line above counts only when the comment is all it holds.
  const candidates = [lineText(line), /^\s*\/\//.test(previous) ? previous : ""];
  return candidates.some((text) => {
    const codes = directiveCodes(text.replace(/\r?\n$/, ""));
    return codes === "all" || (codes !== undefined && codes.has(code));
  });
}
