/**
 * Whether the checkpoint --resume found belongs to the run in its folder. A whole, verified
 * checkpoint of another run copied under this run's checkpoint name would otherwise be taken
 * on with its config, and the folder's metrics cut to its round: the history of one run
 * continued with the model of another.
 *
 * Two links tie a checkpoint to its run: the options that change what a round computes, which
 * every checkpoint of one run shares (a resumed run may change only the others), and the
 * metrics row of its round, which the checkpoint stores and metrics.jsonl holds. Either
 * disagreeing is FT304 naming both files. A metrics file that is itself damaged (missing, a
 * changed column, cut short) is FT304 naming it instead (metrics-check.ts). (The round inside a file against its name is
 * checked where checkpoints are loaded, checkpoint.ts.)
 */
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { listCheckpoints, readCheckpoint, type JsonValue, type LoadedCheckpoint } from "./checkpoint.js";
import { flagName, runOptions, validateRunConfig, type OptionSpec, type RunOptionKey } from "./config.js";
import { metricsFiles } from "./metrics.js";
import { checkMetricsToResume } from "./metrics-check.js";

type JsonRecord = { readonly [key: string]: JsonValue };

const isRecord = (value: JsonValue | undefined): value is JsonRecord => typeof value === "object" && value !== null && !Array.isArray(value);

const show = (value: JsonValue | undefined): string => (value === undefined ? "not set" : JSON.stringify(value));

/**
 * A stored config with its defaults filled in, so that a checkpoint written before an option
 * existed agrees with a later one of the same run that holds the option's default; as stored
 * when it does not validate (the resume itself then says why).
 */
function withDefaults(config: JsonRecord): JsonRecord {
  try {
    return validateRunConfig(config, "a checkpoint") as unknown as JsonRecord;
  } catch {
    return config;
  }
}

/** The first option that changes what a round computes and differs between two stored configs, in words. */
function computingDifference(storedFound: JsonRecord, storedOther: JsonRecord): string | undefined {
  const [found, other] = [withDefaults(storedFound), withDefaults(storedOther)];
  for (const key of new Set([...Object.keys(found), ...Object.keys(other)])) {
    const spec = (runOptions as Readonly<Record<string, OptionSpec<unknown>>>)[key];
    if (spec?.mayChangeOnResume === true) continue;
    if (JSON.stringify(found[key]) !== JSON.stringify(other[key])) {
      const name = spec === undefined ? key : flagName(key as RunOptionKey);
      return `${name} ${show(found[key])} against ${show(other[key])}`;
    }
  }
  return undefined;
}

const notThisRun = (path: string, why: string) =>
  ftError("FT304", { path, why: `${why}: it is not this run's checkpoint (copied here from another run?); move it away to resume from the others, or start the run anew with --overwrite` });

/**
 * FT304 when `loaded` (the checkpoint --resume would continue from) disagrees with the other
 * checkpoints in `dir` on an option that changes what a round computes, or with the row of
 * its round in `dir`'s metrics.jsonl. Damaged checkpoints were reported already and are not
 * compared; a checkpoint without a config or a row (the first format, a library's) is not either.
 */
export async function checkSameRun(dir: string, loaded: LoadedCheckpoint): Promise<void> {
  const { checkpoint, path } = loaded;
  const skipped = new Set(loaded.skipped.map((file) => file.path));
  if (isRecord(checkpoint.config)) {
    for (const file of await listCheckpoints(dir)) {
      if (file.path === path || skipped.has(file.path)) continue;
      const other = await readCheckpoint(file.path).catch(() => undefined);
      if (other === undefined || !isRecord(other.config)) continue;
      const difference = computingDifference(checkpoint.config, other.config);
      if (difference !== undefined) throw notThisRun(path, `its config differs from that of ${file.path}: ${difference}`);
    }
  }
  // The metrics file's own damage (missing, a changed column, cut short) is named as such first.
  const rows = checkMetricsToResume(dir, checkpoint.round, checkpoint.metricsRow);
  if (checkpoint.metricsRow === undefined || rows.length === 0) return;
  const metricsPath = join(dir, metricsFiles.jsonl);
  // The row is on disk before its round's checkpoint is written: a missing one is no accident.
  const row = rows.find((candidate) => candidate.round === checkpoint.round);
  const stored = JSON.stringify(checkpoint.metricsRow);
  if (row === undefined) throw notThisRun(path, `its round ${checkpoint.round} has no row in ${metricsPath}`);
  if (JSON.stringify(row) !== stored) {
    throw notThisRun(path, `its round ${checkpoint.round} is ${stored}, but ${metricsPath} has ${JSON.stringify(row)}`);
  }
}
