/**
 * The run options as people read them: `fedtensor run --help` and the README's table, both
 * from the option table in config.ts.
 */
import { flagName, optionEntries, type RunOptionKey } from "./config.js";

export interface RunOptionRow {
  readonly flag: string;
  readonly key: RunOptionKey;
  readonly default: string;
  readonly range: string;
  /** Empty when the option always applies. */
  readonly appliesTo: string;
  readonly description: string;
}

/** The documented options, one row each, in table order: the one source for help text and README. */
export function runOptionRows(): RunOptionRow[] {
  return optionEntries.map(([key, spec]) => ({
    flag: flagName(key),
    key,
    default: spec.defaultWhen === undefined ? String(spec.default) : `${spec.default}, ${spec.defaultWhen.value} with ${flagName(spec.defaultWhen.key as RunOptionKey)} ${spec.defaultWhen.values.join(" | ")}`,
    range: spec.range,
    appliesTo: spec.onlyWhen === undefined ? "" : `${flagName(spec.onlyWhen.key as RunOptionKey)} ${spec.onlyWhen.values.join(" | ")}`,
    description: spec.description,
  }));
}

/** The options as aligned plain text for `fedtensor run --help`. */
export function formatRunOptionsHelp(): string {
  const rows = runOptionRows();
  const flagWidth = Math.max(...rows.map((r) => r.flag.length));
  return rows
    .map((r) => {
      const only = r.appliesTo === "" ? "" : `; only with ${r.appliesTo}`;
      return `  ${r.flag.padEnd(flagWidth)}  ${r.description} (${r.range}; default ${r.default}${only})`;
    })
    .join("\n");
}

/** The options as a Markdown table for the README. */
export function formatRunOptionsMarkdown(): string {
  const cell = (s: string): string => s.replace(/\|/g, "\\|");
  return [
    "| flag | config key | default | allowed | only with | description |",
    "| --- | --- | --- | --- | --- | --- |",
    ...runOptionRows().map((r) =>
      `| \`${r.flag}\` | \`${r.key}\` | ${cell(r.default)} | ${cell(r.range)} | ${cell(r.appliesTo)} | ${r.description} |`,
    ),
  ].join("\n");
}
