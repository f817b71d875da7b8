/**
 * The reader of FedTensor's first checkpoint format (`checkpoint-<round>.ftckpt`, written up
 * to version 0.1.0), kept so that runs checkpointed then still resume. Nothing writes it any
 * more: checkpoints are safetensors files now (checkpoint-format.ts).
 *
 * Layout (little-endian):
 *   8 bytes   magic "FTCKPT01"
 *   4 bytes   header length H (uint32)
 *   H bytes   header, UTF-8 JSON: round, rngState, config, tree (leaf indices), shapes, payloadBytes
 *   payload   each tensor's float32 values, in leaf order, back to back
 *   32 bytes  SHA-256 of everything before it
 */
import { createHash } from "node:crypto";
import { unflatten } from "../../front/tree.js";
import type { TreeDef } from "../../ir/types.js";
import { elementCount } from "../data/host-tensor.js";
import type { Checkpoint, JsonValue, TensorTree } from "./checkpoint-types.js";

interface LegacyHeader {
  readonly round: number;
  readonly rngState: JsonValue;
  readonly config: JsonValue;
  readonly tree: TreeDef;
  readonly shapes: readonly (readonly number[])[];
  readonly payloadBytes: number;
}

export const legacyMagic = Buffer.from("FTCKPT01", "latin1");
const prefixBytes = legacyMagic.length + 4;
const checksumBytes = 32;

/** Whether `bytes` start like a legacy checkpoint. */
export const isLegacyCheckpoint = (bytes: Buffer): boolean => bytes.subarray(0, legacyMagic.length).equals(legacyMagic);

/** Verifies and decodes a legacy checkpoint's bytes; `corrupt(why)` makes the error for a damaged one. */
export function decodeLegacyCheckpoint(bytes: Buffer, corrupt: (why: string) => Error): Checkpoint {
  if (bytes.length < prefixBytes) throw corrupt(`truncated: ${bytes.length} bytes end before the header length`);
  const headerLength = bytes.readUInt32LE(legacyMagic.length);
  const payloadStart = prefixBytes + headerLength;
  if (payloadStart > bytes.length) {
    throw corrupt(`truncated: its header needs ${payloadStart} bytes, the file has ${bytes.length}`);
  }
  let header: LegacyHeader;
  try {
    header = JSON.parse(bytes.subarray(prefixBytes, payloadStart).toString("utf8")) as LegacyHeader;
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
