/**
 * Checkpoints of a run: the round, the server state (a tree of float32 tensors), the RNG
 * state and the run config, so --resume continues exactly where a run stopped.
 *
 * File layout (`checkpoint-<round>.ftckpt`, little-endian):
 *   8 bytes   magic "FTCKPT01"
 *   4 bytes   header length H (uint32)
 *   H bytes   header, UTF-8 JSON: round, rngState, config, tree (leaf indices), shapes, payloadBytes
 *   payload   each tensor's float32 values, in leaf order, back to back
 *   32 bytes  SHA-256 of everything before it
 *
 * A checkpoint is written to a temp file in the same folder, fsynced, then renamed over its
 * final name, so a reader sees either the whole file or none of it, even after a kill or a
 * crash; the checksum catches damage done later (a truncated copy, a bad disk).
 */
import { createHash } from "node:crypto";
import { open, readdir, readFile, rename, rm } from "node:fs/promises";
import { endianness } from "node:os";
import { join } from "node:path";
import { ftError } from "../../errors/error.js";
import { fileFault } from "./file-faults.js";
import { flatten, leafPaths, unflatten } from "../../front/tree.js";
import type { TreeDef } from "../../ir/types.js";

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

export interface StoredTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

export type TensorTree = StoredTensor | readonly TensorTree[] | { readonly [name: string]: TensorTree };

export interface Checkpoint {
  readonly round: number;
  readonly serverState: TensorTree;
  /** Whatever the run's random generator needs to continue its sequence. */
  readonly rngState: JsonValue;
  readonly config: JsonValue;
}

interface Header {
  readonly round: number;
  readonly rngState: JsonValue;
  readonly config: JsonValue;
  readonly tree: TreeDef;
  readonly shapes: readonly (readonly number[])[];
  readonly payloadBytes: number;
}

const magic = Buffer.from("FTCKPT01", "latin1");
const prefixBytes = magic.length + 4;
const checksumBytes = 32;
const fileNamePattern = /^checkpoint-(\d+)\.ftckpt$/;
const tempNamePattern = /^\.checkpoint-\d+\.ftckpt\.tmp-/;

/** A checkpoint, or the temp file of one being written: the files a run keeps its state in. */
export function isCheckpointArtifact(name: string): boolean {
  return fileNamePattern.test(name) || tempNamePattern.test(name);
}

export function checkpointFileName(round: number): string {
  return `checkpoint-${String(round).padStart(8, "0")}.ftckpt`;
}

/** Tensor bytes are the host's; every platform Node supports in practice is little-endian. */
function requireLittleEndian(): void {
  if (endianness() !== "LE") throw new Error("checkpoints are little-endian; this host is big-endian");
}

function isStoredTensor(x: unknown): x is StoredTensor {
  return x !== null && typeof x === "object" && (x as { data?: unknown }).data instanceof Float32Array;
}

const elementCount = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/**
 * The file's bytes before the checksum, as chunks (prefix, header, one per tensor) so that a
 * large state is not copied into one buffer.
 */
function checkpointBody(checkpoint: Checkpoint): Buffer[] {
  requireLittleEndian();
  const { leaves, def } = flatten(checkpoint.serverState, isStoredTensor, "server state", "float32 tensors");
  const paths = leafPaths(def);
  leaves.forEach((leaf, i) => {
    if (elementCount(leaf.shape) !== leaf.data.length) {
      throw ftError("FT302", {
        what: `server state at ${paths[i] || "the root"}`,
        why: `shape [${leaf.shape.join(",")}] holds ${elementCount(leaf.shape)} values but its data has ${leaf.data.length}`,
      });
    }
  });
  const header: Header = {
    round: checkpoint.round,
    rngState: checkpoint.rngState,
    config: checkpoint.config,
    tree: def,
    shapes: leaves.map((leaf) => leaf.shape),
    payloadBytes: leaves.reduce((sum, leaf) => sum + leaf.data.byteLength, 0),
  };
  const headerBytes = Buffer.from(JSON.stringify(header), "utf8");
  const prefix = Buffer.alloc(prefixBytes);
  magic.copy(prefix);
  prefix.writeUInt32LE(headerBytes.length, magic.length);
  return [prefix, headerBytes, ...leaves.map((leaf) => Buffer.from(leaf.data.buffer, leaf.data.byteOffset, leaf.data.byteLength))];
}

/** Verifies and decodes a checkpoint file's bytes; `path` names it in the FT304 error for a damaged one. */
function decodeCheckpoint(bytes: Buffer, path: string): Checkpoint {
  requireLittleEndian();
  const corrupt = (why: string) => ftError("FT304", { path, why });
  if (!bytes.subarray(0, magic.length).equals(magic)) {
    throw corrupt(`not a FedTensor checkpoint (${bytes.length} bytes, no FTCKPT01 signature)`);
  }
  if (bytes.length < prefixBytes) throw corrupt(`truncated: ${bytes.length} bytes end before the header length`);
  const headerLength = bytes.readUInt32LE(magic.length);
  const payloadStart = prefixBytes + headerLength;
  if (payloadStart > bytes.length) {
    throw corrupt(`truncated: its header needs ${payloadStart} bytes, the file has ${bytes.length}`);
  }
  let header: Header;
  try {
    header = JSON.parse(bytes.subarray(prefixBytes, payloadStart).toString("utf8")) as Header;
  } catch {
    throw corrupt("the header is not valid JSON");
  }
  if (!Number.isSafeInteger(header?.payloadBytes)) throw corrupt("the header does not give the payload size");
  const expectedLength = payloadStart + header.payloadBytes + checksumBytes;
  if (bytes.length !== expectedLength) {
    const what = bytes.length < expectedLength ? "truncated" : "too long";
    throw corrupt(`${what}: expected ${expectedLength} bytes, the file has ${bytes.length}`);
  }
  const checksumStart = bytes.length - checksumBytes;
  const digest = createHash("sha256").update(bytes.subarray(0, checksumStart)).digest();
  if (!digest.equals(bytes.subarray(checksumStart))) throw corrupt("SHA-256 checksum mismatch: the contents are damaged");
  const sizes = header.shapes.map(elementCount);
  if (sizes.reduce((a, b) => a + b, 0) * Float32Array.BYTES_PER_ELEMENT !== header.payloadBytes) {
    throw corrupt("the tensor shapes do not add up to the payload size");
  }
  let offset = payloadStart;
  const leaves = header.shapes.map((shape, i) => {
    const byteLength = sizes[i]! * Float32Array.BYTES_PER_ELEMENT;
    // Copied out: the payload is not 4-byte aligned in the file, and a view would pin the whole buffer.
    const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + byteLength));
    offset += byteLength;
    return { shape, data };
  });
  return {
    round: header.round,
    serverState: unflatten(header.tree, leaves) as TensorTree,
    rngState: header.rngState,
    config: header.config,
  };
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
      return match === null ? [] : [{ round: Number(match[1]), path: join(dir, name) }];
    })
    .sort((a, b) => a.round - b.round);
}

/** Makes a rename or unlink in `dir` durable; Windows cannot open a folder to fsync it. */
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes the body and its SHA-256 to `temp`, and flushes it to the disk. */
async function writeWhole(temp: string, body: readonly Buffer[]): Promise<void> {
  const hash = createHash("sha256");
  const handle = await open(temp, "w");
  try {
    // A write may take fewer bytes than given (large chunks), so it goes on from where it stopped.
    const writeAll = async (bytes: Buffer): Promise<void> => {
      for (let written = 0; written < bytes.length; ) written += (await handle.write(bytes, written)).bytesWritten;
    };
    for (const chunk of body) {
      hash.update(chunk);
      await writeAll(chunk);
    }
    await writeAll(hash.digest());
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface WriteCheckpointOptions {
  /** How many of the newest checkpoints to keep; older ones are deleted. */
  readonly keep: number;
}

/**
 * Writes a checkpoint atomically and prunes the folder: older checkpoints beyond `keep`,
 * checkpoints of later rounds (left by the run this one resumed, now superseded), and temp
 * files of writers that were killed. Returns the checkpoint's path.
 */
export async function writeCheckpoint(dir: string, checkpoint: Checkpoint, { keep }: WriteCheckpointOptions): Promise<string> {
  if (!Number.isSafeInteger(keep) || keep < 1) throw new Error(`keep must be an integer >= 1, got ${keep}`);
  const { round } = checkpoint;
  if (!Number.isSafeInteger(round) || round < 0) throw new Error(`a checkpoint's round must be an integer >= 0, got ${round}`);
  const name = checkpointFileName(round);
  const path = join(dir, name);
  const temp = join(dir, `.${name}.tmp-${process.pid}-${Date.now()}`);
  const body = checkpointBody(checkpoint);
  try {
    await writeWhole(temp, body);
    await rename(temp, path);
    await syncDirectory(dir);
  } catch (error) {
    // A checkpoint cut short (a full disk) must not stay: the previous one is the one to resume from.
    await rm(temp, { force: true }).catch(() => undefined);
    throw fileFault(error, path, "write the checkpoint");
  }

  const existing = await listCheckpoints(dir);
  const older = existing.filter((file) => file.round < round);
  const stale = [
    ...older.slice(0, Math.max(0, older.length - (keep - 1))),
    ...existing.filter((file) => file.round > round),
  ].map((file) => file.path);
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
 * every checkpoint is damaged, throws the FT304 error of the newest.
 */
export async function loadLatestCheckpoint(dir: string): Promise<LoadedCheckpoint | undefined> {
  const files = (await listCheckpoints(dir)).reverse();
  const skipped: { path: string; why: string }[] = [];
  let firstError: unknown;
  for (const { path } of files) {
    try {
      return { checkpoint: await readCheckpoint(path), path, skipped };
    } catch (error) {
      firstError ??= error;
      skipped.push({ path, why: (error as Error).message });
    }
  }
  if (firstError !== undefined) throw firstError;
  return undefined;
}
