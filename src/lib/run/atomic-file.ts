/**
 * Files of a run folder written whole or not at all: the content goes to a temp file beside
 * the target, is flushed to the disk, and only then renamed over the target, and the rename is
 * made durable by syncing the folder. A write cut short (a full disk, EFBIG, a kill) leaves the
 * previous file as it was, never a truncated one under the final name; the temp file of a
 * failed write is removed, and one left by a killed writer is known by its name
 * (tempFileBase), so the run folder's cleanup takes it with the run's files.
 *
 * This is the checkpoint writer's procedure (checkpoint.ts), shared by every file of the folder.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { link, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** A body as pieces, so that large ones (a checkpoint's tensors) need not be joined first. */
export type FileBody = string | Uint8Array | Iterable<Uint8Array>;

const tempPattern = /^\.(.+)\.tmp-\d+-\d+$/;

/** The temp file a write of `path` goes through: hidden, beside it, named for its writer. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${Date.now()}`);
}

/** The name of the file whose temp file `name` is, or undefined when `name` is no temp file. */
export function tempFileBase(name: string): string | undefined {
  return tempPattern.exec(name)?.[1];
}

function* piecesOf(body: FileBody): Iterable<Uint8Array> {
  if (typeof body === "string") yield Buffer.from(body, "utf8");
  else if (body instanceof Uint8Array) yield body;
  else yield* body;
}

/** Writes `body` to a new file at `temp` and flushes it to the disk. */
async function writeFlushed(temp: string, body: FileBody, mode: number): Promise<void> {
  const handle = await open(temp, "wx", mode);
  try {
    for (const bytes of piecesOf(body)) {
      // A write may take fewer bytes than given (large chunks), so it goes on from where it stopped.
      for (let written = 0; written < bytes.length; ) written += (await handle.write(bytes, written)).bytesWritten;
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a rename or unlink in `dir` durable; Windows cannot open a folder to fsync it. */
export async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface AtomicWriteOptions {
  /** File mode of a new file (default 0o666, less the umask). */
  readonly mode?: number;
  /** Refuse (EEXIST) instead of replacing a file already at the path: a file that is made once. */
  readonly exclusive?: boolean;
}

/** Writes `path` whole or not at all; the error of a failed write goes up, with the old file untouched. */
export async function writeFileAtomic(path: string, body: FileBody, options: AtomicWriteOptions = {}): Promise<void> {
  const temp = tempPathFor(path);
  try {
    await writeFlushed(temp, body, options.mode ?? 0o666);
    // link() fails with EEXIST where rename() would replace: an exclusive write keeps what is there.
    if (options.exclusive === true) await link(temp, path).then(() => rm(temp));
    else await rename(temp, path);
    await syncDirectory(dirname(path));
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** writeFileAtomic for synchronous callers (the metrics files, rewritten before a resumed run goes on). */
export function writeFileAtomicSync(path: string, body: FileBody): void {
  const temp = tempPathFor(path);
  try {
    const fd = openSync(temp, "wx");
    try {
      for (const bytes of piecesOf(body)) for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
