/**
 * Per-round metrics of a run, as metrics.jsonl (one JSON object per line, the file --resume
 * reads back) and metrics.csv (the same rows for spreadsheets). Each row is written and
 * fsynced before append() returns, so a run killed at any point keeps every completed round;
 * a row that could not be written whole is taken back off both files.
 */
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { redactCredentials } from "../../errors/redact.js";
import { writeFileAtomicSync } from "./atomic-file.js";
import { fileFault } from "./file-faults.js";

export type MetricValue = number | string | boolean | null;
export type MetricsRow = { readonly round: number } & { readonly [column: string]: MetricValue };

export const metricsFiles = { jsonl: "metrics.jsonl", csv: "metrics.csv" } as const;

/** RFC 4180: a field with a comma, quote or line break is quoted, and its quotes doubled. */
function csvField(value: MetricValue): string {
  const text = value === null ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvLine(fields: readonly MetricValue[]): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

function checkRow(row: MetricsRow, columns: readonly string[]): void {
  const keys = Object.keys(row);
  const added = keys.filter((key) => !columns.includes(key));
  const missing = columns.filter((key) => !keys.includes(key));
  if (added.length > 0 || missing.length > 0) {
    const parts = [
      added.length > 0 ? `new columns ${added.join(", ")}` : "",
      missing.length > 0 ? `missing columns ${missing.join(", ")} (write null for a value a round lacks)` : "",
    ];
    throw new Error(`metrics row for round ${row.round} does not match the columns ${columns.join(", ")}: ${parts.filter(Boolean).join("; ")}`);
  }
  for (const key of keys) {
    const value = row[key];
    // JSON has no NaN or Infinity; writing null for them would hide a diverged run.
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw ftError("FT303", { round: row.round, what: `the metrics value ${key} (${value})` });
    }
  }
}

/** metrics.jsonl as read: its whole rows, and the text of a last line cut short ("" when none). */
export interface MetricsFile {
  readonly rows: readonly MetricsRow[];
  readonly torn: string;
}

/**
 * Reads metrics.jsonl. A last line without its newline is a row whose write was cut off by
 * a kill, and is left out of `rows` (`torn` holds it); any other malformed line is an FT304 error.
 */
export function readMetricsFile(path: string): MetricsFile {
  let content: string;
  try {
    content = readFileSync(path, "utf8");
  } catch (error) {
    throw ftError("FT304", { path, why: `cannot read metrics (${(error as Error).message})` });
  }
  const lines = content.split("\n");
  const torn = lines.pop()!; // the text after the last newline: empty, or a torn row
  const rows = lines.map((line, index) => {
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw ftError("FT304", { path, why: `line ${index + 1} is not valid JSON` });
    }
    if (row === null || typeof row !== "object" || !Number.isSafeInteger((row as { round?: unknown }).round)) {
      throw ftError("FT304", { path, why: `line ${index + 1} is not a metrics row with an integer round` });
    }
    return row as MetricsRow;
  });
  return { rows, torn };
}

/** The whole rows of metrics.jsonl (readMetricsFile's). */
export const readMetrics = (path: string): MetricsRow[] => [...readMetricsFile(path).rows];

export class MetricsWriter {
  private readonly jsonlFd: number;
  private readonly csvFd: number;
  private columns: readonly string[] | undefined;

  private constructor(
    private readonly dir: string,
    columns: readonly string[] | undefined,
    private last: MetricsRow | undefined = undefined,
    /** On resume: where the rows after the resumed round went, and their rounds. */
    readonly setAside: { readonly path: string; readonly rounds: readonly number[] } | undefined = undefined,
  ) {
    this.jsonlFd = inFolder(dir, "open the metrics files", () => openSync(join(dir, metricsFiles.jsonl), "a"));
    this.csvFd = inFolder(dir, "open the metrics files", () => openSync(join(dir, metricsFiles.csv), "a"));
    this.columns = columns;
  }

  /** Starts fresh metrics files in `dir`, replacing any there. */
  static create(dir: string): MetricsWriter {
    inFolder(dir, "create the metrics files", () => {
      for (const name of Object.values(metricsFiles)) closeSync(openSync(join(dir, name), "w"));
    });
    return new MetricsWriter(dir, undefined);
  }

  /**
   * Continues the metrics of a run resumed after `round`, rebuilding the CSV from
   * metrics.jsonl. Rows of later rounds (written after the checkpoint being resumed, and
   * about to be computed again) are never deleted: they move to a file of their own,
   * metrics.jsonl.superseded-<n> (`setAside` says which), so a wrong resume loses nothing.
   */
  static resume(dir: string, round: number): MetricsWriter {
    const jsonlPath = join(dir, metricsFiles.jsonl);
    const rows = existsSync(jsonlPath) ? readMetrics(jsonlPath) : [];
    const kept = rows.filter((row) => row.round <= round);
    const later = rows.filter((row) => row.round > round);
    const columns = kept.length === 0 ? undefined : Object.keys(kept[0]!);
    const csv = columns === undefined ? "" : [columns, ...kept.map((row) => columns.map((c) => row[c] ?? null))].map(csvLine).join("");
    const lines = (some: readonly MetricsRow[]) => some.map((row) => `${JSON.stringify(row)}\n`).join("");
    // Each file is replaced through a rename, and the later rows are put aside before they
    // leave metrics.jsonl, so a kill here leaves every row in one file or two.
    const setAside = inFolder(dir, "rewrite the metrics files", () => {
      const aside = later.length === 0 ? undefined : join(dir, `${metricsFiles.jsonl}.superseded-${nextSupersededNumber(dir)}`);
      if (aside !== undefined) replaceFile(aside, lines(later));
      replaceFile(jsonlPath, lines(kept));
      replaceFile(join(dir, metricsFiles.csv), csv);
      return aside === undefined ? undefined : { path: aside, rounds: later.map((row) => row.round) };
    });
    return new MetricsWriter(dir, columns, kept.at(-1), setAside);
  }

  /** The last row written (or kept on resume): a checkpoint of its round stores it (checkpoint-match.ts). */
  get lastRow(): MetricsRow | undefined {
    return this.last;
  }

  /** Whether the rows have column `name`; undefined before the first row (a resumed run's columns are its first rows'). */
  hasColumn(name: string): boolean | undefined {
    return this.columns?.includes(name);
  }

  /**
   * Appends one round's row to both files and flushes them to disk: whole rows or none. A
   * write that fails (a full disk) is cut back off both files before the error goes up, so
   * neither keeps a torn row; a kill mid-write can still leave one, which readMetrics and
   * resume() drop. (Rewriting the files through a temp file each round, as the other files of
   * a run folder are written, would copy every earlier row every round.)
   */
  append(row: MetricsRow): void {
    const columns = this.columns ?? Object.keys(row);
    checkRow(row, columns);
    // A text value never carries a URL's password into the files (redact.ts).
    const written = Object.fromEntries(columns.map((c) => [c, typeof row[c] === "string" ? redactCredentials(row[c]) : row[c]])) as MetricsRow;
    const csv = `${this.columns === undefined ? csvLine(columns) : ""}${csvLine(columns.map((c) => written[c] ?? null))}`;
    inFolder(this.dir, "append to the metrics files", () => {
      const sizes = [fstatSync(this.jsonlFd).size, fstatSync(this.csvFd).size] as const;
      try {
        writeAll(this.jsonlFd, `${JSON.stringify(written)}\n`);
        writeAll(this.csvFd, csv);
        fsyncSync(this.jsonlFd);
        fsyncSync(this.csvFd);
      } catch (error) {
        ftruncateSync(this.jsonlFd, sizes[0]);
        ftruncateSync(this.csvFd, sizes[1]);
        throw error;
      }
      this.columns = columns;
      this.last = written;
    });
  }

  close(): void {
    closeSync(this.jsonlFd);
    closeSync(this.csvFd);
  }
}

/** Runs file work on the metrics of `dir`, its file-system errors as FT307. */
function inFolder<T>(dir: string, doing: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw fileFault(error, dir, doing);
  }
}

/** One write call per row, so a kill leaves whole rows plus at most one torn last line. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written);
}

/** Superseded metrics files: the rows a resume took back out of metrics.jsonl. */
export const supersededMetricsPattern = /^metrics\.jsonl\.superseded-(\d+)$/;

/** One more than the highest n of a metrics.jsonl.superseded-<n> in `dir`. */
function nextSupersededNumber(dir: string): number {
  const numbers = readdirSync(dir).map((name) => Number(supersededMetricsPattern.exec(name)?.[1] ?? 0));
  return Math.max(0, ...numbers) + 1;
}

const replaceFile = writeFileAtomicSync;
