/**
 * The Node client's onnxruntime on a worker thread (src/deploy/client/ort-thread.ts): the same
 * outputs as onnxruntime-node on the calling thread, for float32, int32 and bool tensors; the
 * model's and the feeds' errors come back as rejections with onnxruntime's reason, and after
 * close() every call is refused. The worker runs the compiled script, so this test uses the
 * compiled module in dist/ (npm test builds it first).
 */
import { describe, expect, it } from "vitest";
import type { OrtLike, OrtTensorLike } from "../../src/deploy/client/core.js";
import type * as OrtThread from "../../src/deploy/client/ort-thread.js";
import { ModelScope, OnnxGraph, valueInfo } from "../../src/lower/onnx/graph.js";
import { modelBytes } from "../../src/lower/onnx/model.js";

const { ortOnThread } = (await import(`${"../../dist/src"}/deploy/client/ort-thread.js`)) as typeof OrtThread;
const ortModule = await import("onnxruntime-node");
const direct = ((ortModule as { default?: unknown }).default ?? ortModule) as unknown as OrtLike;

/** y = x x^T (float32 [n, n]), k = -i (int32), b = x > 0 (bool). */
function model(n: number): Uint8Array {
  const g = new OnnxGraph(new ModelScope());
  const y = g.op1("MatMul", ["x", g.op1("Transpose", ["x"])]);
  const k = g.op1("Neg", ["i"]);
  // x > -x: x > 0.
  const b = g.op1("Greater", ["x", g.op1("Neg", ["x"])]);
  return modelBytes(g.finish("m", [valueInfo("x", "float32", [n, n]), valueInfo("i", "int32", [3])], [{ name: y, type: "float32", shape: [n, n] }, { name: k, type: "int32", shape: [3] }, { name: b, type: "bool", shape: [n, n] }]));
}

async function runOn(ort: OrtLike, n: number, x: Float32Array): Promise<Record<string, OrtTensorLike>> {
  const session = await ort.InferenceSession.create(model(n), { executionProviders: ["cpu"] });
  const out = await session.run({ x: new ort.Tensor("float32", x, [n, n]), i: new ort.Tensor("int32", Int32Array.of(1, -2, 3), [3]) });
  await session.release();
  return out;
}

describe("onnxruntime on the client's worker thread", () => {
  it("gives onnxruntime-node's outputs, with their types and dims", async () => {
    const ort = ortOnThread();
    const n = 64;
    const x = Float32Array.from({ length: n * n }, (_, i) => Math.sin(i));
    const [threaded, here] = [await runOn(ort, n, x), await runOn(direct, n, x)];
    for (const name of Object.keys(here)) {
      expect(threaded[name]!.type).toBe(here[name]!.type);
      expect([...threaded[name]!.dims]).toEqual([...here[name]!.dims]);
      expect(Array.from(threaded[name]!.data as ArrayLike<number>)).toEqual(Array.from(here[name]!.data as ArrayLike<number>));
    }
    expect(Array.from(threaded[Object.keys(here)[1]!]!.data as Int32Array)).toEqual([-1, 2, -3]);
    await ort.close();
  });

  it("rejects a model onnxruntime cannot load and feeds of the wrong shape with onnxruntime's reason; after close() every call is refused", async () => {
    const ort = ortOnThread();
    await expect(ort.InferenceSession.create(Uint8Array.of(1, 2, 3), {})).rejects.toThrow(/protobuf|parse|load/i);
    const session = await ort.InferenceSession.create(model(4), {});
    await expect(session.run({ x: new ort.Tensor("float32", new Float32Array(9), [3, 3]), i: new ort.Tensor("int32", new Int32Array(3), [3]) })).rejects.toThrow(/dimension|shape|Got/i);
    // The session is still usable after a refused run.
    const out = await session.run({ x: new ort.Tensor("float32", new Float32Array(16).fill(1), [4, 4]), i: new ort.Tensor("int32", new Int32Array(3), [3]) });
    expect(Array.from(Object.values(out)[0]!.data as Float32Array)).toEqual(new Array(16).fill(4));
    await ort.close();
    await expect(session.run({ x: new ort.Tensor("float32", new Float32Array(16), [4, 4]), i: new ort.Tensor("int32", new Int32Array(3), [3]) })).rejects.toThrow(/exited/);
  });
});
