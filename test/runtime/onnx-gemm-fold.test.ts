/**
 * The ONNX lowering folds an update `w + s1 * (s2 * (a @ b))` (an SGD step's -lr, then local
 * training's 0 or 1 for a padding step) into one Gemm accumulating into w: the model has no
 * MatMul, Mul or Add on the product's shape, and computes what the reference interpreter does.
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { add, atServer, f32, matmul, mul, neg, program, sub, transpose } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import type { OutputLeaf } from "../../src/interpret/io.js";
import type { ProgramIR } from "../../src/ir/types.js";
import { buildModel } from "../../src/lower/onnx/model.js";

const inputs = {
  w: [
    [0.5, -1, 2],
    [1.5, 0.25, -0.75],
  ],
  a: [
    [1, 2, -1, 0.5],
    [0, -3, 2, 1],
  ],
  b: [
    [1, 0, 2],
    [-1, 1, 0.5],
    [2, 2, -2],
    [0.5, -1, 1],
  ],
  lr: 0.1,
  taken: 1,
};
const specs = { w: atServer(f32([2, 3])), a: atServer(f32([2, 4])), b: atServer(f32([4, 3])), lr: atServer(f32([])), taken: atServer(f32([])) };

/** What the test needs of a program, whatever its input types. */
interface Program {
  readonly ir: ProgramIR;
  run(inputs: never, options: { backend: "onnx" }): Promise<unknown>;
}
type Inputs = Record<string, number | number[][]>;

/** The program's output on onnx and on the reference interpreter. */
async function onnxAndReference(p: Program, inputs: Inputs): Promise<[number[], number[]]> {
  const out = (await p.run(inputs as never, { backend: "onnx" })) as tf.Tensor;
  const onnx = Array.from(await out.data());
  out.dispose();
  return [onnx, Array.from((interpret(p.ir, inputs) as OutputLeaf).data)];
}

const expectFoldedAndEqual = async (p: Program, inputs: Inputs, absent: readonly string[]) => {
  const ops = buildModel(p.ir).graph.node.map((n) => n.op_type);
  expect(ops.filter((op) => op === "Gemm")).toHaveLength(1);
  for (const op of ["MatMul", ...absent]) expect(ops).not.toContain(op);
  const [onnx, reference] = await onnxAndReference(p, inputs);
  expect(onnx).toHaveLength(6);
  onnx.forEach((v, i) => expect(v).toBeCloseTo(reference[i]!, 5));
};

describe("SGD updates fold into Gemm on onnx", () => {
  test("through a chain of scalar factors, one of them a constant", async () => {
    const step = program(specs, ({ w, a, b, lr, taken }) => add(w, mul(mul(mul(matmul(a, b), neg(lr)), taken), 2)));
    await expectFoldedAndEqual(step, inputs, ["Add"]);
  });

  test("with the product's operand transposed and the update subtracted", async () => {
    const step = program({ ...specs, a: atServer(f32([4, 2])) }, ({ w, a, b, lr, taken }) => sub(w, mul(taken, mul(lr, matmul(transpose(a, [1, 0]), b)))));
    const transposed = inputs.a[0]!.map((_, j) => inputs.a.map((row) => row[j]!));
    await expectFoldedAndEqual(step, { ...inputs, a: transposed }, ["Transpose", "Sub"]);
  });
});
