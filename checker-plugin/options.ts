/**
 * The plugin's options, set in its tsconfig entry and read by the plugin and by
 * `fedtensor check` alike:
 *
 *   "plugins": [{ "name": "fedtensor/checker-plugin", "explanation": "short",
 *                 "severity": { "FT104": "warning", "FT206": "off" }, "inlayHints": false }]
 *
 * An option the plugin does not know, or a value outside its range, is reported (the plugin
 * logs it, `fedtensor check` stops with FT305) and the default is used instead.
 */
import type ts from "typescript";
import { catalogue, type ErrorCode } from "../src/errors/catalogue.js";
import type { ExplanationMode } from "./explain.js";

/** What an FT code's diagnostics are shown as; `off` drops them. */
export type Severity = "error" | "warning" | "suggestion" | "message" | "off";

export interface PluginOptions {
  /** `full`: message, what went wrong, why and how to fix; `short`: the FT messages alone. */
  readonly explanation: ExplanationMode;
  readonly severity: { readonly [C in ErrorCode]?: Severity };
  /** Inlay hints with the placement and shape of `const` bindings and map() parameters. */
  readonly inlayHints: boolean;
}

export const pluginName = "fedtensor/checker-plugin";
export const defaultOptions: PluginOptions = { explanation: "full", severity: {}, inlayHints: true };

const severities: readonly string[] = ["error", "warning", "suggestion", "message", "off"] satisfies Severity[];

/** A problem with one option: which, and why its value is not used. */
export interface OptionProblem {
  readonly option: string;
  readonly why: string;
}

/** The options of a plugin entry (tsserver's `info.config`), with the problems found in it. */
export function readOptions(config: unknown): { options: PluginOptions; problems: OptionProblem[] } {
  const problems: OptionProblem[] = [];
  const entry = (typeof config === "object" && config !== null ? config : {}) as { [key: string]: unknown };
  let { explanation, severity, inlayHints } = defaultOptions;
  for (const [key, value] of Object.entries(entry)) {
    if (key === "name") continue;
    if (key === "explanation") {
      if (value === "full" || value === "short") explanation = value;
      else problems.push({ option: key, why: `must be "full" or "short", got ${JSON.stringify(value)}` });
    } else if (key === "inlayHints") {
      if (typeof value === "boolean") inlayHints = value;
      else problems.push({ option: key, why: `must be true or false, got ${JSON.stringify(value)}` });
    } else if (key === "severity") {
      severity = readSeverity(value, problems);
    } else {
      problems.push({ option: key, why: "unknown option; the options are explanation, severity and inlayHints" });
    }
  }
  return { options: { explanation, severity, inlayHints }, problems };
}

function readSeverity(value: unknown, problems: OptionProblem[]): PluginOptions["severity"] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push({ option: "severity", why: `must map FT codes to severities, got ${JSON.stringify(value)}` });
    return {};
  }
  const severity: { [C in ErrorCode]?: Severity } = {};
  for (const [code, level] of Object.entries(value)) {
    if (!(code in catalogue)) problems.push({ option: `severity.${code}`, why: "not an FT code of the catalogue" });
    else if (typeof level !== "string" || !severities.includes(level)) {
      problems.push({ option: `severity.${code}`, why: `must be one of ${severities.join(", ")}, got ${JSON.stringify(level)}` });
    } else severity[code as ErrorCode] = level as Severity;
  }
  return severity;
}

/** The plugin's entry in a program's compiler options, if the tsconfig has one. */
export function pluginEntry(options: ts.CompilerOptions): unknown {
  const plugins = (options.plugins ?? []) as readonly { name?: string }[];
  return plugins.find((p) => p.name === pluginName);
}
