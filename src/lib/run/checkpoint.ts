/**
 * Checkpoints of a run: the round, the server state (a tree of float32 tensors), the RNG
 * state and the run config, so --resume continues exactly where a run stopped.
 *
 * A checkpoint is a safetensors file, `checkpoint-<round>.safetensors`, with an integrity
 * digest in its metadata (checkpoint-format.ts has the layout); `checkpoint-<round>.ftckpt`
 * files of the first format still load. It is written to a temp file in the same folder,
 * fsynced, then renamed over its final name, so a reader sees either the whole file or none
 * of it, even after a kill or a crash; the digest catches damage done later (a truncated
 * copy, a bad disk). The clients' states, when they keep any, go to a companion file written
 * first, client by client (client-state-file.ts), which the checkpoint names with its digest.
 */
import { readdir, readFile, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { ftError } from "../../errors/error.js";
import { writeFileAtomic } from "./atomic-file.js";
import { decodeCheckpoint, encodeCheckpoint } from "./checkpoint-format.js";
import type { Checkpoint } from "./checkpoint-types.js";
import type { ClientStateStore } from "./client-state.js";
import { clientStatesFileName, writeClientStates } from "./client-state-file.js";
import { fileFault } from "./file-faults.js";

export type { Checkpoint, JsonValue, StoredTensor, TensorTree } from "./checkpoint-types.js";

/** Checkpoint files: the current format, and the first one (read only). */
const fileNamePattern = /^checkpoint-(\d+)\.(safetensors|ftckpt)$/;
const tempNamePattern = /^\.checkpoint-\d+\.(clients\.)?(safetensors|ftckpt)\.tmp-/;
const companionPattern = /^checkpoint-\d+\.clients\.safetensors$/;

/** A checkpoint, its clients' states, or the temp file of one being written: the files a run keeps its state in. */
export function isCheckpointArtifact(name: string): boolean {
  return fileNamePattern.test(name) || companionPattern.test(name) || tempNamePattern.test(name);
}

export function checkpointFileName(round: number): string {
  return `checkpoint-${String(round).padStart(8, "0")}.safetensors`;
}

export async function readCheckpoint(path: string): Promise<Checkpoint> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw ftError("FT304", { path, why: `cannot read the checkpoint (${(error as Error).message})` });
  }
  return decodeCheckpoint(bytes, path);
}

export interface CheckpointFile {
  readonly round: number;
  readonly path: string;
}

/** The checkpoints in `dir`, oldest first; none when the folder does not exist. */
export async function listCheckpoints(dir: string): Promise<CheckpointFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return names
    .flatMap((name) => {
      const match = fileNamePattern.exec(name);
      return match === null ? [] : [{ round: Number(match[1]), path: join(dir, name), legacy: match[2] === "ftckpt" }];
    })
    // Oldest first; of one round's two files, the current format is the newer.
    .sort((a, b) => a.round - b.round || Number(b.legacy) - Number(a.legacy))
    .map(({ round, path }) => ({ round, path }));
}

export interface WriteCheckpointOptions {
  /** How many of the newest checkpoints to keep; older ones are deleted. */
  readonly keep: number;
  /** The clients' states, written to the checkpoint's companion file one client at a time. */
  readonly clientStates?: ClientStateStore;
}

/**
 * Writes a checkpoint atomically and prunes the folder: older checkpoints beyond `keep` (and
 * round 0's, whatever `keep`),
 * checkpoints of later rounds (left by the run this one resumed, now superseded), and temp
 * files of writers that were killed. Returns the checkpoint's path.
 */
export async function writeCheckpoint(dir: string, checkpoint: Checkpoint, { keep, clientStates }: WriteCheckpointOptions): Promise<string> {
  if (!Number.isSafeInteger(keep) || keep < 1) throw new Error(`keep must be an integer >= 1, got ${keep}`);
  const { round } = checkpoint;
  if (!Number.isSafeInteger(round) || round < 0) throw new Error(`a checkpoint's round must be an integer >= 0, got ${round}`);
  const name = checkpointFileName(round);
  const path = join(dir, name);
  const companion = join(dir, clientStatesFileName(name));
  try {
    // The clients' states first: the checkpoint that names them exists only once they are whole.
    const ref = clientStates === undefined ? undefined : await writeClientStates(companion, clientStates, round);
    // A checkpoint cut short (a full disk) must not stay: the previous one is the one to resume from.
    await writeFileAtomic(path, encodeCheckpoint(ref === undefined ? checkpoint : { ...checkpoint, clientStates: ref }));
    if (ref === undefined) await rm(companion, { force: true });
  } catch (error) {
    throw fileFault(error, path, "write the checkpoint");
  }

  const existing = await listCheckpoints(dir);
  const older = existing.filter((file) => file.round < round && file.round > 0);
  // Round 0's checkpoint (the state a run starts from, so that a run killed in its first
  // rounds can be resumed) has served once a later one is there.
  const stale = [
    ...existing.filter((file) => file.round === 0 && round > 0),
    ...older.slice(0, Math.max(0, older.length - (keep - 1))),
    ...existing.filter((file) => file.round > round),
  ].flatMap((file) => [file.path, join(dir, clientStatesFileName(basename(file.path)))]);
  const temps = (await readdir(dir)).filter((entry) => tempNamePattern.test(entry)).map((entry) => join(dir, entry));
  await Promise.all([...stale, ...temps].map((file) => rm(file, { force: true })));
  return path;
}

export interface LoadedCheckpoint {
  readonly checkpoint: Checkpoint;
  readonly path: string;
  /** Newer checkpoints that failed verification, with why, so the caller can warn about them. */
  readonly skipped: readonly { readonly path: string; readonly why: string }[];
}

/**
 * The newest checkpoint in `dir` that verifies; undefined when there is none at all. When
 * every checkpoint is damaged, throws the FT304 error of the newest; FT304 too when the one
 * found holds another round than its name says.
 */
export async function loadLatestCheckpoint(dir: string): Promise<LoadedCheckpoint | undefined> {
  const files = (await listCheckpoints(dir)).reverse();
  const skipped: { path: string; why: string }[] = [];
  let firstError: unknown;
  for (const { path, round } of files) {
    let checkpoint: Checkpoint;
    try {
      checkpoint = await readCheckpoint(path);
    } catch (error) {
      firstError ??= error;
      skipped.push({ path, why: (error as Error).message });
      continue;
    }
    // Whole and verified, yet not what its name says: a file copied over this one, which no
    // older checkpoint should quietly stand in for (the run would go on from the wrong place).
    if (checkpoint.round !== round) {
      throw ftError("FT304", { path, why: `holds the state after round ${checkpoint.round}, not round ${round} as its name says: a checkpoint of another round or run copied here; move it away, or start the run anew with --overwrite` });
    }
    return { checkpoint, path, skipped };
  }
  if (firstError !== undefined) throw firstError;
  return undefined;
}
