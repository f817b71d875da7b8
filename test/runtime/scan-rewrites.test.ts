/**
 * simplify()'s rewrites of the scans a gradient makes (src/transform/scan-rewrites.ts) and of
 * its padded slices: a recurrent cell's gradient, taken the way users write one (weights split
 * into gates by slicing), keeps one forward scan instead of two, sums its weight cotangents after
 * the backward scan instead of carrying them, and joins its gates' cotangents with one concat;
 * runs what the step recomputed from the stored carries before the loop, for all steps at once;
 * and it computes what the program computed before the rewrites, on every path.
 */
import * as tf from "@tensorflow/tfjs";
import { expect, test } from "vitest";
import { add, atServer, f32, grad, matmul, mul, program, scan, sigmoid, slice, sum, tanh, type Graph, type Node } from "../../src/index.js";
import { interpret } from "../../src/interpret/reference.js";
import { batchProgram } from "../../src/transform/batch.js";
import { simplify } from "../../src/transform/simplify.js";
import { specialize } from "../../src/transform/specialize.js";
import { toHost, type HostLeaf } from "../differential/compare.js";

const [steps, rows, features, hidden] = [5, 2, 3, 4];
const specs = {
  w: atServer(f32([features, 2 * hidden])),
  u: atServer(f32([hidden, 2 * hidden])),
  xs: atServer(f32([steps, rows, features])),
  h0: atServer(f32([rows, hidden])),
};
// h' = sigmoid(z[:, :H]) * tanh(z[:, H:]) with z = x W + h U; the loss reads every step's h and the last.
const gradients = program(specs, ({ w, u, xs, h0 }) =>
  grad((weights: { w: typeof w; u: typeof u }) => {
    const [last, hs] = scan(h0, xs, (h, x) => {
      const z = add(matmul(x, weights.w), matmul(h, weights.u));
      const next = mul(sigmoid(slice(z, [0, 0], [-1, hidden])), tanh(slice(z, [0, hidden], [-1, hidden])));
      return [next, next] as const;
    });
    return add(sum(last), sum(mul(hs, hs)));
  })({ w, u }),
);

const count = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const inputs = {
  w: count(features, (i) => count(2 * hidden, (j) => Math.sin(1 + i * 7 + j) / 2)),
  u: count(hidden, (i) => count(2 * hidden, (j) => Math.cos(2 + i * 5 + j) / 2)),
  xs: count(steps, (t) => count(rows, (r) => count(features, (f) => Math.sin(t + 3 * r + 5 * f)))),
  h0: count(rows, (r) => count(hidden, (j) => (r - j) / 8)),
};

type Gradients = Record<"w" | "u", HostLeaf>;
const scans = (g: Graph): Node[] => g.nodes.flatMap((n) => [...(n.op === "scan" ? [n] : []), ...(n.bodies ?? []).flatMap(scans)]);
const ops = (g: Graph): string[] => g.nodes.flatMap((n) => [n.op, ...(n.bodies ?? []).flatMap(ops)]);
const ir = gradients.ir;
// As program.run compiles it: simplified, batched (placements become local), simplified again.
const specialised = simplify(specialize(ir, ir.graph.inputs.map((id) => ir.values[id]!), new Map()));
const simplified = simplify(batchProgram(specialised, 1, { acceptBatchedMap: () => true }).ir);

test("the gradient's scans: one forward, and a backward one that carries no weight cotangent and recomputes nothing", () => {
  const before = scans(ir.graph);
  expect(before.map((n) => n.attrs.reverse === true)).toEqual([false, false, true]);
  // The backward scan carried h's cotangent and those of w and u, the weights the body multiplies by.
  expect(before[2]!.attrs.carries).toBe(3);
  const after = scans(simplified.graph);
  expect(after.map((n) => n.attrs.reverse === true)).toEqual([false, true]);
  expect(after[1]!.attrs.carries).toBe(1);
  // The gates' cotangents are joined by one concat, not padded and added.
  const backward = after[1]!.bodies![0]!;
  expect(ops(backward)).toContain("concat");
  expect(ops(backward)).not.toContain("pad");
  // What the step recomputed from the stored carries (the gates, their activations'
  // derivatives) runs before the loop for all steps: left in the loop is the one product
  // that is recurrent, the cotangent of h.
  expect(ops(backward).filter((op) => op === "matmul")).toHaveLength(1);
  expect(ops(backward)).not.toContain("sigmoid");
  expect(ops(backward)).not.toContain("tanh");
});

test("the rewritten gradient computes what the program did, in the reference interpreter and compiled", async () => {
  const want = interpret(ir, inputs) as unknown as Gradients;
  const exact = interpret(simplified, inputs) as unknown as Gradients;
  for (const name of ["w", "u"] as const) {
    expect(Array.from(want[name].data).some((v) => Math.abs(v) > 0.01), `${name} is not all zeros`).toBe(true);
    Array.from(exact[name].data).forEach((v, i) => expect(v, `${name}[${i}], float64`).toBeCloseTo(want[name].data[i]!, 12));
  }
  for (const backend of ["onnx", "wasm", "cpu"] as const) {
    const out = await gradients.run(inputs as never, { backend });
    try {
      const got = (await toHost(out)) as unknown as Gradients;
      for (const name of ["w", "u"] as const) {
        Array.from(got[name].data).forEach((v, i) => expect(v, `${name}[${i}] on ${backend}`).toBeCloseTo(want[name].data[i]!, 5));
      }
    } finally {
      tf.dispose(out as tf.TensorContainer);
    }
  }
});
