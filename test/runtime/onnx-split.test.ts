/**
 * The ONNX lowering turns slices that cut one value into consecutive parts along one axis (an
 * LSTM's gates) into one Split, and keeps Slice where the parts overlap, leave a gap or cut two
 * axes; either way the model computes what the reference interpreter does.
 */
import * as tf from "@tensorflow/tfjs";
import { expect, test } from "vitest";
import { add, atServer, f32, mul, program, sigmoid, slice, sum, tanh } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import type { OutputLeaf } from "../../src/interpret/io.js";
import type { ProgramIR } from "../../src/ir/types.js";
import { buildModel } from "../../src/lower/onnx/model.js";

/** What the test needs of a program, whatever its output type. */
interface Program {
  readonly ir: ProgramIR;
  run(inputs: never, options: { backend: "onnx" }): Promise<unknown>;
}

const z = Array.from({ length: 3 }, (_, i) => Array.from({ length: 8 }, (_, j) => Math.sin(1 + 3 * i + j)));
const specs = { z: atServer(f32([3, 8])) };
// Parts of widths 2, 4 and 2, used out of order.
const tiled = program(specs, ({ z }) => mul(add(tanh(slice(z, [0, 6], [-1, 2])), slice(z, [0, 0], [-1, 2])), sigmoid(sum(slice(z, [0, 2], [-1, 4])))));
const overlapping = program(specs, ({ z }) => mul(slice(z, [0, 0], [-1, 5]), slice(z, [0, 3], [-1, 5])));
const gap = program(specs, ({ z }) => mul(slice(z, [0, 0], [-1, 3]), slice(z, [0, 4], [-1, 3])));
const twoAxes = program(specs, ({ z }) => mul(slice(z, [0, 0], [2, 4]), slice(z, [1, 4], [2, 4])));

async function onnxAndReference(p: Program): Promise<[number[], number[]]> {
  const out = (await p.run({ z } as never, { backend: "onnx" })) as tf.Tensor;
  const onnx = Array.from(await out.data());
  out.dispose();
  return [onnx, Array.from((interpret(p.ir, { z }) as OutputLeaf).data)];
}
const ops = (p: Program) => buildModel(p.ir).graph.node.map((n) => n.op_type);

test("slices that tile an axis are one Split", async () => {
  expect(ops(tiled).filter((op) => op === "Split")).toHaveLength(1);
  expect(ops(tiled)).not.toContain("Slice");
  const [onnx, reference] = await onnxAndReference(tiled);
  onnx.forEach((v, i) => expect(v).toBeCloseTo(reference[i]!, 6));
});

test("slices that overlap, leave a gap or cut two axes stay slices", async () => {
  for (const p of [overlapping, gap, twoAxes] as Program[]) {
    expect(ops(p)).not.toContain("Split");
    expect(ops(p).filter((op) => op === "Slice")).toHaveLength(2);
    const [onnx, reference] = await onnxAndReference(p);
    expect(onnx).toHaveLength(reference.length);
    onnx.forEach((v, i) => expect(v).toBeCloseTo(reference[i]!, 6));
  }
});
