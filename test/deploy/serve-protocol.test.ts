/** The wire format at the boundary: frames, records and updates that are not the protocol's are refused with a reason. */
import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, FrameError } from "../../src/deploy/protocol/frame.js";
import { clientMessageSchema, MAX_HEADER_BYTES, WIRE_VERSION } from "../../src/deploy/protocol/messages.js";
import { decodeRecord, encodeRecord, RecordError, type RecordValue } from "../../src/deploy/protocol/record.js";
import { accumulatorProblem } from "../../src/deploy/server/tasks.js";
import { deadline } from "../helpers/deadline.js";

const decode = (bytes: Uint8Array) => decodeFrame(bytes, clientMessageSchema, { update: 1000 }, 10_000);
const header = (text: string) => {
  const json = new TextEncoder().encode(text);
  const out = new Uint8Array(4 + json.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  return out;
};

describe("frames", () => {
  it("round-trip a message and its body", () => {
    const body = Uint8Array.of(1, 2, 3);
    const { header: h, body: b } = decode(encodeFrame({ v: WIRE_VERSION, type: "update", round: 3, task: "t" }, body));
    expect(h).toEqual({ v: WIRE_VERSION, type: "update", round: 3, task: "t" });
    expect([...b]).toEqual([1, 2, 3]);
  });

  it.each([
    ["no header", Uint8Array.of(1), /no header/],
    ["a header longer than the frame", header("{}").subarray(0, 4), /shorter than its header/],
    ["JSON that is not", header("{"), /not UTF-8 JSON/],
    // Version 1 carried the masked vector as base64: a peer of that version is refused, not misread.
    ["another version", encodeFrame({ v: 1, type: "ready", examples: 1 }), /wire version 1 where this peer speaks 2/],
    ["an unknown type", encodeFrame({ v: WIRE_VERSION, type: "gossip" }), /malformed header/],
    ["an extra field", encodeFrame({ v: WIRE_VERSION, type: "ready", examples: 1, x: [1, 2] }), /malformed header/],
    ["a wrong field type", encodeFrame({ v: WIRE_VERSION, type: "ready", examples: "many" }), /malformed header/],
    ["a body where none is allowed", encodeFrame({ v: WIRE_VERSION, type: "ready", examples: 1 }, Uint8Array.of(0)), /ready body of 1 bytes exceeds the limit of 0/],
    ["an oversized body", encodeFrame({ v: WIRE_VERSION, type: "update", round: 1, task: "t" }, new Uint8Array(1001)), /update body of 1001 bytes exceeds/],
    ["an oversized frame", new Uint8Array(10_001), /exceeds the limit of 10000/],
  ])("refuse %s", (_, bytes, reason) => {
    expect(() => decode(bytes)).toThrow(FrameError);
    expect(() => decode(bytes)).toThrow(reason);
  });

  it("refuse a header over the header limit before parsing it", () => {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setUint32(0, MAX_HEADER_BYTES + 1, true);
    expect(() => decodeFrame(bytes, clientMessageSchema, {}, 1e9)).toThrow(/header of 65537 bytes exceeds/);
  });
});

describe("records", () => {
  const values = new Map<string, RecordValue>([
    ["w", { dtype: "float32", shape: [2, 2], data: Float32Array.of(1.5, -2, 3e-8, Number.MAX_VALUE) }],
    ["n", { dtype: "int32", shape: [3], data: Int32Array.of(-1, 0, 2 ** 31 - 1) }],
    ["b", { dtype: "bool", shape: [2], data: Uint8Array.of(1, 0) }],
    ["lr", 0.1],
  ]);

  it("round-trip exactly, bit for bit", () => {
    expect(decodeRecord(encodeRecord(values))).toEqual(values);
  });

  it.each([
    ["a truncated tensor", (b: Uint8Array) => b.subarray(0, b.length - 1), /ends inside b/],
    ["trailing bytes", (b: Uint8Array) => Uint8Array.from([...b, 0]), /1 bytes after its values/],
  ])("refuse %s", (_, damage, reason) => {
    expect(() => decodeRecord(damage(encodeRecord(values)))).toThrow(reason);
  });

  it("refuse a header that is not one", () => {
    expect(() => decodeRecord(header(JSON.stringify([{ name: "x", dtype: "float64", shape: [1] }])))).toThrow(RecordError);
    expect(() => decodeRecord(header(JSON.stringify([{ name: "x", number: 1 }, { name: "x", number: 2 }])))).toThrow(/names x twice/);
    expect(() => decodeRecord(header(JSON.stringify([{ name: "x", dtype: "float32", shape: [-1] }])))).toThrow(/malformed/);
  });
});

describe("updates against the accumulator's types", () => {
  const expected = new Map([
    ["acc0", { dtype: "float32", shape: [] }],
    ["acc1", { dtype: "float32", shape: [2, 3] }],
  ]);
  const update = (acc1: RecordValue) => new Map<string, RecordValue>([["acc0", { dtype: "float32", shape: [], data: Float32Array.of(3) }], ["acc1", acc1]]);

  it("accept the accumulator", () => {
    expect(accumulatorProblem(update({ dtype: "float32", shape: [2, 3], data: new Float32Array(6) }), expected)).toBeUndefined();
  });

  it.each([
    ["the wrong length", update({ dtype: "float32", shape: [3, 3], data: new Float32Array(9) }), /shape \[3, 3\] where the program's type is \[2, 3\]/],
    ["the wrong dtype", update({ dtype: "int32", shape: [2, 3], data: new Int32Array(6) }), /int32 where the program's type is float32/],
    ["NaN", update({ dtype: "float32", shape: [2, 3], data: Float32Array.of(0, 0, NaN, 0, 0, 0) }), /NaN or infinite/],
    ["a number", update(1), /a number where/],
    ["a missing entry", new Map<string, RecordValue>([["acc0", 1]]), /1 values where the accumulator has 2/],
  ])("refuse %s", (_, value, reason) => {
    expect(accumulatorProblem(value, expected)).toMatch(reason);
  });
});
