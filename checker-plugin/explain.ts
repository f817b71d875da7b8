/**
 * FT errors in TypeScript diagnostics, explained from the error catalogue. Shared by the
 * checker plugin (the editor's diagnostics) and `fedtensor check` (the command line), so both
 * say the same thing in the same words.
 *
 * A failed FedTensor check makes a parameter's type the FT message itself, so tsc reports it
 * inside an ordinary diagnostic (TS2345, TS2322, ...) as a string literal type:
 * `... not assignable to parameter of type '"FT101: broadcast() takes a SERVER value, got ..."'`.
 * The messages are read back from that text; nothing here needs the TypeScript runtime.
 */
import type ts from "typescript";
import { catalogue, type ErrorCode } from "../src/errors/catalogue.js";

/** One FT message found in a diagnostic: its code and its full text ("FT101: ..."). */
export interface FtMessage {
  readonly code: ErrorCode;
  readonly text: string;
}

// A string literal type as tsc prints it: double quotes, with `"` and `\` escaped.
const quotedFtMessage = /"(FT(\d{3}): (?:[^"\\]|\\.)*)"/g;

function chainTexts(message: string | ts.DiagnosticMessageChain, into: string[]): string[] {
  if (typeof message === "string") {
    into.push(message);
  } else {
    into.push(message.messageText);
    for (const next of message.next ?? []) chainTexts(next, into);
  }
  return into;
}

/** The FT messages a diagnostic reports, in order, each once; empty for other diagnostics. */
export function ftMessagesIn(message: string | ts.DiagnosticMessageChain): FtMessage[] {
  const found = new Map<string, FtMessage>();
  for (const text of chainTexts(message, [])) {
    for (const match of text.matchAll(quotedFtMessage)) {
      const code = `FT${match[2]}`;
      if (!(code in catalogue)) continue;
      const full = match[1]!.replace(/\\(.)/g, "$1");
      if (!found.has(full)) found.set(full, { code: code as ErrorCode, text: full });
    }
  }
  return [...found.values()];
}

/**
 * Whether a diagnostic's text names an FT message, even one that tsc cut short: the start of
 * a quoted message is enough.
 */
export function mentionsFtMessage(message: string | ts.DiagnosticMessageChain): boolean {
  return chainTexts(message, []).some((text) => /"FT\d{3}: /.test(text));
}

/** An FT message read from a string literal type's value, or undefined for other strings. */
export function ftMessageOf(text: string): FtMessage | undefined {
  const code = /^(FT\d{3}): /.exec(text)?.[1];
  return code !== undefined && code in catalogue ? { code: code as ErrorCode, text } : undefined;
}

/**
 * The values a message filled into the placeholders of its catalogue template (`{op}`,
 * `{got}`, ...), or undefined when the text does not follow the template.
 */
export function messageParams(message: FtMessage): { readonly [placeholder: string]: string } | undefined {
  const template: string = catalogue[message.code].message;
  const pattern = template
    .split(/\{(\w+)\}/)
    .map((part, i) => (i % 2 === 1 ? `(?<${part}>.+?)` : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${message.code}: ${pattern}$`).exec(message.text)?.groups;
}

/** The kind of rule an FT code enforces, as the explanation names it. */
export function ruleKind(code: ErrorCode): string {
  switch (code) {
    case "FT107":
      return "tree structure";
    case "FT108":
      return "tracing";
    case "FT205":
      return "dtype";
    case "FT109":
    case "FT110":
    case "FT362":
      return "privacy";
    default:
      return code.startsWith("FT1") ? "placement" : code.startsWith("FT2") ? "shape" : "run-time";
  }
}

/** How much of the catalogue a diagnostic carries: all of it, or the FT messages alone. */
export type ExplanationMode = "full" | "short";

/** What went wrong, why the rule exists, and how to fix it: the catalogue's text for a code. */
export function explanationOf(code: ErrorCode): string[] {
  const entry = catalogue[code];
  const kind = ruleKind(code);
  return [
    `What went wrong: ${entry.title}.`,
    `Why this is ${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind} error: ${entry.explanation}`,
    `How to fix it: ${entry.fix}`,
  ];
}

/**
 * The explained lines of a diagnostic's FT messages: per code (in the order the codes first
 * appear), its messages (one per failing leaf of a tree) and then, in full mode, the
 * explanation once; codes are parted by an empty line. The plugin joins the lines into the
 * diagnostic's text; the CLI prints the first as the headline and indents the rest under a
 * code frame.
 */
export function explanationLines(messages: readonly FtMessage[], mode: ExplanationMode = "full"): string[] {
  const codes = [...new Set(messages.map((m) => m.code))];
  return codes.flatMap((code, i) => [
    ...(i === 0 ? [] : [""]),
    ...messages.filter((m) => m.code === code).map((m) => m.text),
    ...(mode === "full" ? explanationOf(code) : []),
  ]);
}

/** The explained text of a diagnostic that reports FT messages. */
export function explainedText(messages: readonly FtMessage[], mode: ExplanationMode = "full"): string {
  return explanationLines(messages, mode).join("\n");
}
