/** The engine's binary records (src/lib/run/engine/wire.ts): exact, and a third smaller than base64 JSON. */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { decodeRecord, encodeRecord, toTensor } from "../../src/lib/run/engine/wire.js";

describe("binary records", () => {
  test("tensors of every dtype, host tensors and numbers come back with the same bits", async () => {
    const floats = Float32Array.of(0.1, -0, Number.MIN_VALUE, 3.4e38, Math.fround(1 / 3));
    const values = new Map<string, unknown>([
      ["w", tf.tensor(floats, [5])],
      ["ids", tf.tensor(Int32Array.of(-1, 2 ** 31 - 1), [2, 1], "int32")],
      ["flags", tf.tensor([1, 0, 1], [3], "bool")],
      ["host", { shape: [2], data: Float32Array.of(7, 8) }],
      ["lr", 0.1],
    ]);
    const decoded = decodeRecord(await encodeRecord(values));
    expect([...decoded.keys()]).toEqual(["w", "ids", "flags", "host", "lr"]);
    const w = decoded.get("w") as { shape: number[]; data: Float32Array };
    expect(w.shape).toEqual([5]);
    expect(Buffer.from(w.data.buffer).equals(Buffer.from(floats.buffer))).toBe(true);
    expect(Array.from((decoded.get("ids") as { data: Int32Array }).data)).toEqual([-1, 2 ** 31 - 1]);
    expect(Array.from(await toTensor(decoded.get("flags")!).data())).toEqual([1, 0, 1]);
    expect(decoded.get("lr")).toBe(0.1);
    tf.dispose([...values.values()].filter((v): v is tf.Tensor => v instanceof tf.Tensor));
  });

  test("a 2NN-sized accumulator: 4 bytes a value plus a short header, against base64's 5.33", async () => {
    const values = 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10;
    const record = await encodeRecord(new Map([["w", { shape: [values], data: new Float32Array(values) }]]));
    const base64Json = JSON.stringify({ w: { shape: [values], dtype: "float32", bytes: Buffer.from(new Float32Array(values).buffer).toString("base64") } }).length;
    expect(record.length).toBeLessThan(4 * values + 100);
    expect(record.length / base64Json).toBeLessThan(0.76);
  });

  test("a record cut short or with bytes after its values is refused", async () => {
    const record = await encodeRecord(new Map([["w", { shape: [4], data: new Float32Array(4) }]]));
    expect(() => decodeRecord(record.subarray(0, record.length - 1))).toThrow(/ends inside w/);
    expect(() => decodeRecord(Buffer.concat([record, Buffer.alloc(2)]))).toThrow(/2 bytes after its values/);
    expect(() => decodeRecord(Buffer.alloc(2))).toThrow(/has no header/);
  });
});
