/**
 * A round of Mime, MimeLite (with a momentum and an Adam base), q-FFL and AFL gives the same
 * result on every backend: onnx, tfjs wasm and cpu against the float64 reference interpreter,
 * from a state that is not zero and on clients with padding batches.
 */
import { describe, expect, test } from "vitest";
import { interpret } from "../../src/interpret/reference.js";
import { aflProgram } from "../../src/lib/algorithms/afl.js";
import { mimeProgram } from "../../src/lib/algorithms/mime.js";
import { qfflProgram } from "../../src/lib/algorithms/qffl.js";
import { adam } from "../../src/lib/optimizers/index.js";
import type { Program } from "../../src/index.js";
import { differences, toHost } from "../differential/compare.js";
import { batchInputs, separableCohort, tiny, withPaddingBatches } from "./helpers.js";

const backends = ["onnx", "wasm", "cpu"] as const;

const leaf = (shape: number[], seed: number, scale = 1) => ({
  shape,
  data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => scale * Math.sin(seed * 7 + i * 1.3)),
});
const tree = (seed: number, scale = 1) => ({ w: leaf([2, 2], seed, scale), b: leaf([2], seed + 1, scale) });
/** A tree of positive entries: Adam's second moment. */
const squares = (seed: number, scale: number) => {
  const { w, b } = tree(seed);
  const square = (t: { shape: number[]; data: Float32Array }) => ({ shape: t.shape, data: t.data.map((x) => scale * x * x) });
  return { w: square(w), b: square(b) };
};
const scalar = (value: number) => ({ shape: [], data: Float32Array.of(value) });
const common = { params: tree(2), ...batchInputs(withPaddingBatches(separableCohort([5, 9, 3], 2), 1)) };

const cases: { name: string; program: Program<never, unknown>; inputs: object }[] = [
  { name: "Mime", program: mimeProgram(tiny, "mime") as never, inputs: { lr: 0.1, serverLr: 0.9, state: { count: scalar(3), trace: tree(4, 0.1) } } },
  { name: "MimeLite", program: mimeProgram(tiny, "mimelite") as never, inputs: { lr: 0.1, serverLr: 0.9, state: { count: scalar(3), trace: tree(4, 0.1) } } },
  {
    name: "MimeLite with an Adam base",
    program: mimeProgram(tiny, "mimelite", { baseOptimizer: (lr) => adam(lr) }) as never,
    inputs: { lr: 0.05, serverLr: 1, state: { count: scalar(2), mu: tree(6, 0.1), nu: squares(8, 0.01) } },
  },
  { name: "q-FFL", program: qfflProgram(tiny) as never, inputs: { lr: 0.3, q: 2 } },
  {
    name: "AFL",
    program: aflProgram(tiny, { clients: 4 }) as never,
    inputs: { lr: 0.3, aflLr: 0.2, lambda: { shape: [4], data: Float32Array.of(0.4, 0.1, 0.3, 0.2) }, client: [2, 0, 3] },
  },
];

describe.each(backends)("%s agrees with the reference interpreter", (backend) => {
  test.each(cases)("a round of $name", async ({ program, inputs }) => {
    const all = { ...common, ...inputs };
    const want = interpret(program.ir, all as never);
    const got = await toHost(await program.run(all as never, { backend }));
    expect(differences(got, want)).toEqual([]);
  });
});
