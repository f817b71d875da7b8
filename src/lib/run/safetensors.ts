/**
 * The safetensors file format (https://huggingface.co/docs/safetensors), the tensor file of
 * the Hugging Face ecosystem that PyTorch, JAX, NumPy and Rust read:
 *
 *   8 bytes   N, the header's length (unsigned 64-bit little-endian)
 *   N bytes   header, UTF-8 JSON: { name: { dtype, shape, data_offsets: [begin, end] }, ...,
 *             "__metadata__": { string: string } }, padded with spaces (here to a multiple of 8,
 *             as the reference writer does, so the data that follows is aligned)
 *   rest      the tensors' little-endian bytes; offsets are relative to the start of this part,
 *             and together the tensors cover it exactly, with no holes and no overlaps
 *
 * Hand-written rather than a dependency: no npm package for it is maintained by the format's
 * authors, the format is this one paragraph, and the checks below follow the reference
 * implementation's (header size, offsets, dtype sizes, full coverage).
 */
import { endianness } from "node:os";
import { elementCount } from "../data/host-tensor.js";

/** The dtypes FedTensor stores; others in a file are reported, not misread. */
export type SafetensorsDType = "F32" | "I32";

export interface SafetensorsTensor {
  readonly dtype: SafetensorsDType;
  readonly shape: readonly number[];
  readonly data: Float32Array | Int32Array;
}

export interface SafetensorsFile {
  /** Tensors in the order of their data in the file. */
  readonly tensors: ReadonlyMap<string, SafetensorsTensor>;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What is wrong with a file's bytes, said for the caller to wrap in its own error (FT304 for checkpoints). */
export class SafetensorsFormatError extends Error {}

const lengthBytes = 8;
/** The reference implementation refuses larger headers (a guard against absurd allocations). */
const maxHeaderBytes = 100_000_000;
const metadataKey = "__metadata__";

function requireLittleEndian(): void {
  // Typed arrays use the host's byte order and the format is little-endian.
  if (endianness() !== "LE") throw new Error("safetensors files are little-endian; this host is big-endian");
}

interface HeaderEntry {
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly data_offsets: readonly [number, number];
}

/**
 * The file's bytes as chunks (length and header, then one per tensor, not copied), tensors in
 * the order given. Names must be unique and not `__metadata__`.
 */
export function encodeSafetensors(tensors: ReadonlyMap<string, SafetensorsTensor>, metadata: Readonly<Record<string, string>>): Buffer[] {
  requireLittleEndian();
  const header: Record<string, unknown> = { [metadataKey]: metadata };
  let offset = 0;
  for (const [name, { dtype, shape, data }] of tensors) {
    if (name === metadataKey) throw new Error(`a tensor may not be named ${metadataKey}`);
    if (elementCount(shape) !== data.length) throw new Error(`tensor ${name}: shape [${shape.join(",")}] does not hold ${data.length} values`);
    header[name] = { dtype, shape: [...shape], data_offsets: [offset, offset + data.byteLength] };
    offset += data.byteLength;
  }
  const json = JSON.stringify(header);
  const unpadded = Buffer.byteLength(json, "utf8");
  const headerBytes = Buffer.alloc(Math.ceil(unpadded / 8) * 8, " ");
  headerBytes.write(json, 0, "utf8");
  const length = Buffer.alloc(lengthBytes);
  length.writeBigUInt64LE(BigInt(headerBytes.length));
  return [length, headerBytes, ...[...tensors.values()].map(({ data }) => Buffer.from(data.buffer, data.byteOffset, data.byteLength))];
}

const dtypeArrays = { F32: Float32Array, I32: Int32Array } as const;

function checkedEntry(name: string, value: unknown, dataLength: number): HeaderEntry {
  const bad = (why: string) => new SafetensorsFormatError(`tensor ${JSON.stringify(name)}: ${why}`);
  const entry = value as Partial<HeaderEntry> | null;
  if (entry === null || typeof entry !== "object") throw bad("its header entry is not an object");
  const { dtype, shape, data_offsets: offsets } = entry;
  if (typeof dtype !== "string") throw bad("no dtype");
  if (!(dtype in dtypeArrays)) throw bad(`dtype ${dtype} is not one FedTensor reads (F32, I32)`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw bad("its shape is not a list of sizes");
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
    throw bad("its data_offsets are not two byte offsets");
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end || end > dataLength) throw bad(`data_offsets [${begin}, ${end}] lie outside the ${dataLength} data bytes`);
  const expected = elementCount(shape) * dtypeArrays[dtype as SafetensorsDType].BYTES_PER_ELEMENT;
  if (end - begin !== expected) throw bad(`${dtype}[${shape.join(",")}] needs ${expected} bytes, data_offsets give ${end - begin}`);
  return { dtype, shape, data_offsets: [begin, end] };
}

/** Parses and checks a safetensors file's bytes; throws SafetensorsFormatError saying what is wrong. */
export function decodeSafetensors(bytes: Uint8Array): SafetensorsFile {
  requireLittleEndian();
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < lengthBytes) throw new SafetensorsFormatError(`truncated: ${buffer.length} bytes end before the header length`);
  const headerLength = buffer.readBigUInt64LE(0);
  if (headerLength > BigInt(maxHeaderBytes)) throw new SafetensorsFormatError(`header length ${headerLength} is over the format's limit of ${maxHeaderBytes}`);
  const dataStart = lengthBytes + Number(headerLength);
  if (dataStart > buffer.length) throw new SafetensorsFormatError(`truncated: the header needs ${dataStart} bytes, the file has ${buffer.length}`);
  const headerText = buffer.subarray(lengthBytes, dataStart).toString("utf8");
  if (!headerText.startsWith("{")) throw new SafetensorsFormatError("the header is not a JSON object");
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(headerText) as Record<string, unknown>;
  } catch {
    throw new SafetensorsFormatError("the header is not valid JSON");
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) throw new SafetensorsFormatError("the header is not a JSON object");
  const { [metadataKey]: rawMetadata, ...entries } = header;
  const metadata = (rawMetadata ?? {}) as Record<string, unknown>;
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata) || !Object.values(metadata).every((v) => typeof v === "string")) {
    throw new SafetensorsFormatError(`${metadataKey} is not a map of strings`);
  }
  const dataLength = buffer.length - dataStart;
  const checked = Object.entries(entries)
    .map(([name, value]) => [name, checkedEntry(name, value, dataLength)] as const)
    .sort(([, a], [, b]) => a.data_offsets[0] - b.data_offsets[0] || a.data_offsets[1] - b.data_offsets[1]);
  let covered = 0;
  for (const [name, { data_offsets: [begin, end] }] of checked) {
    if (begin !== covered) {
      throw new SafetensorsFormatError(`tensor ${JSON.stringify(name)} starts at byte ${begin} where ${covered} was expected (a hole or an overlap)`);
    }
    covered = end;
  }
  if (covered !== dataLength) throw new SafetensorsFormatError(`the tensors cover ${covered} of the ${dataLength} data bytes`);
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, { dtype, shape, data_offsets: [begin, end] }] of checked) {
    const Array_ = dtypeArrays[dtype as SafetensorsDType];
    // Copied out: the data need not be aligned for a typed array view, and a view would pin the whole file.
    const copy = Uint8Array.prototype.slice.call(buffer, dataStart + begin, dataStart + end);
    tensors.set(name, { dtype: dtype as SafetensorsDType, shape, data: new Array_(copy.buffer) });
  }
  return { tensors, metadata: metadata as Record<string, string> };
}
