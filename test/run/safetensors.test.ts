import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readCheckpoint, writeCheckpoint } from "../../src/lib/run/checkpoint.js";
import { decodeSafetensors, encodeSafetensors, SafetensorsFormatError, type SafetensorsTensor } from "../../src/lib/run/safetensors.js";
import { tempDir } from "./temp-dir.js";

const f32 = (shape: number[], values: number[]): SafetensorsTensor => ({ dtype: "F32", shape, data: Float32Array.from(values) });

describe("the safetensors format", () => {
  it("writes the bytes the format specifies", () => {
    const tensors = new Map([
      ["b", f32([2], [1, -2])],
      ["a", { dtype: "I32", shape: [], data: Int32Array.from([7]) } as const],
    ]);
    const bytes = Buffer.concat(encodeSafetensors(tensors, { k: "v" }));
    const json = '{"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"I32","shape":[],"data_offsets":[8,12]}}';
    // The header is padded with spaces to a multiple of 8 bytes, so the data is 8-byte aligned.
    const padded = json.padEnd(Math.ceil(json.length / 8) * 8, " ");
    const expected = Buffer.alloc(8 + padded.length + 12);
    expected.writeBigUInt64LE(BigInt(padded.length), 0);
    expected.write(padded, 8, "utf8");
    expected.writeFloatLE(1, 8 + padded.length);
    expected.writeFloatLE(-2, 12 + padded.length);
    expected.writeInt32LE(7, 16 + padded.length);
    expect(bytes.equals(expected)).toBe(true);
  });

  it("reads a file written by another writer: no metadata, unpadded header, tensors out of name order", () => {
    const json = '{"z":{"dtype":"F32","shape":[1,2],"data_offsets":[4,12]},"y":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}';
    const bytes = Buffer.alloc(8 + json.length + 12);
    bytes.writeBigUInt64LE(BigInt(json.length), 0);
    bytes.write(json, 8, "utf8");
    bytes.writeInt32LE(-3, 8 + json.length);
    bytes.writeFloatLE(0.5, 12 + json.length);
    bytes.writeFloatLE(4, 16 + json.length);
    const { tensors, metadata } = decodeSafetensors(bytes);
    expect(metadata).toEqual({});
    expect([...tensors.keys()]).toEqual(["y", "z"]);
    expect(tensors.get("z")).toEqual(f32([1, 2], [0.5, 4]));
    expect(tensors.get("y")).toEqual({ dtype: "I32", shape: [1], data: Int32Array.from([-3]) });
  });

  it("rejects what the reference reader rejects: holes, overlaps, wrong sizes, unknown dtypes, huge headers", () => {
    const file = (header: object, dataBytes: number): Buffer => {
      const json = JSON.stringify(header);
      const bytes = Buffer.alloc(8 + json.length + dataBytes);
      bytes.writeBigUInt64LE(BigInt(json.length), 0);
      bytes.write(json, 8, "utf8");
      return bytes;
    };
    const cases: [Buffer, string][] = [
      [file({ a: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, 8), 'tensor "a" starts at byte 4 where 0 was expected (a hole or an overlap)'],
      [file({ a: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, b: { dtype: "F32", shape: [1], data_offsets: [4, 8] } }, 8), 'tensor "b" starts at byte 4 where 8 was expected'],
      [file({ a: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, 8), 'tensor "a": F32[3] needs 12 bytes, data_offsets give 8'],
      [file({ a: { dtype: "BF16", shape: [1], data_offsets: [0, 2] } }, 2), 'tensor "a": dtype BF16 is not one FedTensor reads (F32, I32)'],
      [file({ a: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, 8), "the tensors cover 4 of the 8 data bytes"],
      [file({ __metadata__: { n: 1 } }, 0), "__metadata__ is not a map of strings"],
      [Buffer.from("ffffffffffffffff", "hex"), "header length 18446744073709551615 is over the format's limit of 100000000"],
    ];
    for (const [bytes, message] of cases) {
      expect(() => decodeSafetensors(bytes)).toThrow(SafetensorsFormatError);
      expect(() => decodeSafetensors(bytes)).toThrow(message);
    }
  });
});

/** Python 3 with NumPy, or why not; the test below reads our checkpoints with it. */
function pythonWithNumpy(): string | undefined {
  const probe = spawnSync("python3", ["-c", "import numpy"], { encoding: "utf8" });
  if (probe.error !== undefined) return `python3 is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `python3 has no numpy (${probe.stderr.trim().split("\n").pop()})`;
  return undefined;
}

const noPython = pythonWithNumpy();
if (noPython !== undefined) console.warn(`skipping the NumPy interoperability test: ${noPython}`);

describe.skipIf(noPython !== undefined)("a checkpoint read from Python with NumPy", () => {
  it("holds every tensor under its tree path, and the round in its metadata", async () => {
    const dir = tempDir("ft-safetensors-");
    const state = {
      params: { w1: { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 0, 1e-8, 6]) }, b1: { shape: [3], data: Float32Array.from([0.25, 0.5, 0.75]) } },
      server: {},
      clients: { "3": { w1: { shape: [1], data: Float32Array.from([Math.PI]) } } },
    };
    const path = await writeCheckpoint(dir, { round: 12, serverState: state, rngState: { seed: 1 }, config: { lr: 0.1 } }, { keep: 1 });
    // A plain safetensors reader in Python, as the format's specification describes it.
    const script = `
import json, struct, sys, numpy as np
raw = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
out = {"round": meta["round"], "config": json.loads(meta["config"])}
for name, t in header.items():
    assert t["dtype"] == "F32"
    b, e = t["data_offsets"]
    out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(t["shape"]).tolist()
print(json.dumps(out))
`;
    writeFileSync(join(dir, "read.py"), script);
    const read = JSON.parse(execFileSync("python3", [join(dir, "read.py"), path], { encoding: "utf8" }));
    expect(read).toEqual({
      round: "12",
      config: { lr: 0.1 },
      "params.w1": [[1, -2, 3.5], [0, Math.fround(1e-8), 6]],
      "params.b1": [0.25, 0.5, 0.75],
      "clients.3.w1": [Math.fround(Math.PI)],
    });
    expect((await readCheckpoint(path)).serverState).toEqual(state);
    expect(readFileSync(path).subarray(8, 9).toString()).toBe("{");
  });
});
