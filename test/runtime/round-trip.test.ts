import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import { atClients, atServer, broadcast, f32, FedTensorError, grad, loadProgram, map, mul, program, reduceMean, scan, sub, sum } from "../../src/index.js";

const training = program({ w: atServer(f32([2])), x: atClients(f32(["S", 2])) }, ({ w, x }) => {
  const loss = (v: typeof w) => reduceMean(map((wm, xm) => sum(mul(mul(wm, wm), sum(xm))), broadcast(v), x));
  const local = map((wm, xs) => scan(wm, xs, (p, row) => [sub(p, mul(row, 0.1)), sum(row)] as const), broadcast(w), x);
  return { step: sub(w, mul(grad(loss)(w), 0.5)), local: local[0], ys: local[1] };
});
const inputs = { w: [1, -2], x: [[[1, 2], [3, 4]], [[0.5, 0.5], [1, -1]]] };

async function values(out: Record<string, tf.Tensor>): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  for (const [k, t] of Object.entries(out)) {
    result[k] = await t.array();
    t.dispose();
  }
  return result;
}

describe("IR JSON round trip", () => {
  test("a reloaded program has the same signature and computes the same values", async () => {
    const json = JSON.stringify(training);
    const reloaded = loadProgram(json);
    expect(reloaded.signature).toBe(training.signature);
    expect(JSON.parse(JSON.stringify(reloaded))).toEqual(JSON.parse(json));
    const original = await values((await training.run(inputs)) as never);
    expect(await values((await reloaded.run(inputs)) as never)).toEqual(original);
    // loss = mean over clients of |w|^2 * (sum of the client's rows): 10 and 1, so grad = 2 w 5.5.
    expect(original.step).toEqual([1 - 0.5 * 11 * 1, -2 - 0.5 * 11 * -2].map((v) => expect.closeTo(v, 5)));
  });

  test("a damaged IR is refused with FT302, saying what is wrong", () => {
    const ir = JSON.parse(JSON.stringify(training));
    const refuse = (json: unknown, why: RegExp) => {
      try {
        loadProgram(json);
        throw new Error("accepted");
      } catch (error) {
        expect(error).toBeInstanceOf(FedTensorError);
        expect((error as FedTensorError).code).toBe("FT302");
        expect((error as Error).message).toMatch(why);
      }
    };
    refuse("{not json", /not JSON/);
    refuse({ ...ir, version: 2 }, /version 2 is not supported/);
    refuse({ ...ir, format: "onnx" }, /format/);
    const unknownOp = JSON.parse(JSON.stringify(ir));
    unknownOp.graph.nodes[0].op = "teleport";
    refuse(unknownOp, /unknown primitive teleport/);
    const wrongType = JSON.parse(JSON.stringify(ir));
    wrongType.values[wrongType.graph.outputs[0]].shape = [3];
    refuse(wrongType, /output 0 is stored as/);
  });
});
