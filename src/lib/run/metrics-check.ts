/**
 * The metrics files of a run about to be resumed, checked before any round trains, as its
 * checkpoints are: a resume rewrites metrics.jsonl and rebuilds metrics.csv from it
 * (MetricsWriter.resume), so a damaged or missing metrics.jsonl would otherwise lose the run's
 * history silently, or fail rounds later when the next row does not match the columns.
 *
 * metrics.csv is not checked: a resume rebuilds it from metrics.jsonl, which is the record.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import type { JsonValue } from "./checkpoint-types.js";
import { metricsFiles, readMetricsFile, type MetricsRow } from "./metrics.js";

const restore = "restore the file from a copy, or start the run anew with --overwrite";

/** How a row's columns differ from the run's, in words. */
function columnDifference(keys: readonly string[], columns: readonly string[]): string {
  const added = keys.filter((key) => !columns.includes(key));
  const missing = columns.filter((key) => !keys.includes(key));
  const parts = [added.length > 0 ? `column ${added.join(", ")} where the run has none` : "", missing.length > 0 ? `no column ${missing.join(", ")}` : ""].filter(Boolean);
  return parts.length > 0 ? parts.join(" and ") : `its columns in another order`;
}

/**
 * FT304 naming metrics.jsonl (and its line) when it cannot continue the run whose checkpoint
 * of `round` is resumed: missing after round 0 (the run created it before its first round),
 * a row whose columns differ from the run's (those of the checkpoint's stored row, else line
 * 1's), or rows that end before the checkpoint's round when the checkpoint stores that round's
 * row (it is written after the row is on disk, so the file was cut short since).
 */
export function checkMetricsToResume(dir: string, round: number, storedRow: JsonValue | undefined): MetricsRow[] {
  const path = join(dir, metricsFiles.jsonl);
  if (!existsSync(path)) {
    // A run killed between round 0's checkpoint and creating its metrics files has no rows to lose.
    if (round === 0) return [];
    const csv = join(dir, metricsFiles.csv);
    const csvNote = existsSync(csv) ? ` (${csv} is rebuilt from it on resume: keep a copy of that file first)` : "";
    throw ftError("FT304", { path, why: `is missing, but the checkpoint to resume is of round ${round}: resuming would lose the rows of rounds 1-${round}${csvNote}; ${restore}` });
  }
  const { rows, torn } = readMetricsFile(path);
  const stored = typeof storedRow === "object" && storedRow !== null && !Array.isArray(storedRow) ? storedRow : undefined;
  const columns = stored !== undefined ? Object.keys(stored) : rows[0] === undefined ? [] : Object.keys(rows[0]);
  rows.forEach((row, index) => {
    const keys = Object.keys(row);
    if (keys.join("\n") !== columns.join("\n")) {
      throw ftError("FT304", { path, why: `line ${index + 1} (round ${row.round}) has ${columnDifference(keys, columns)} (the run's columns are ${columns.join(", ")}); ${restore}` });
    }
  });
  const last = rows.at(-1);
  if (stored !== undefined && (last?.round ?? 0) < round) {
    const end = last === undefined ? "has no whole row" : `ends at round ${last.round} (line ${rows.length})`;
    const cut = torn === "" ? "" : `, and its line ${rows.length + 1} is cut short`;
    throw ftError("FT304", { path, why: `${end}${cut}, before round ${round} of the checkpoint to resume, whose row it held: the file was cut short or replaced since; ${restore}` });
  }
  return [...rows];
}
