/**
 * The ops of issue 24 point 4 (argmin, square, softplus, log1p, floor, round, mod, norm,
 * squaredDistance, sigmoidCrossEntropy, binaryCrossEntropy) on every path: the reference
 * interpreter and the optimised path on cpu, wasm and onnx must each give the values worked out
 * by hand below, edge cases included (log1p of tiny x, halves for round, the signs of mod, an
 * int32 mod by 0, ties for argmin), per client inside map too; and their gradients, taken with
 * valueAndGrad in the program, the closed forms (checked against finite differences as well).
 */
import * as tf from "@tensorflow/tfjs";
import { describe, expect, test } from "vitest";
import {
  argmin,
  atClients,
  atServer,
  binaryCrossEntropy,
  f32,
  floor,
  grad,
  i32,
  log1p,
  map,
  mod,
  norm,
  program,
  round,
  sigmoidCrossEntropy,
  softplus,
  square,
  squaredDistance,
  sum,
  type Program,
} from "../../src/index.js";
import { interpret, type InputTree, type OutputLeaf } from "../../src/interpret/reference.js";
import { toHost, type HostLeaf } from "./compare.js";

type Path = "reference" | "cpu" | "wasm" | "onnx";

/** The program's outputs (a record of leaves) on every path, as data. */
async function allPaths(p: Program<unknown, unknown>, inputs: InputTree, clients?: number): Promise<Record<Path, Record<string, HostLeaf>>> {
  const onBackend = async (backend: "cpu" | "wasm" | "onnx") => {
    const out = await p.run(inputs as never, { backend, ...(clients === undefined ? {} : { clients }) });
    try {
      return (await toHost(out)) as Record<string, HostLeaf>;
    } finally {
      tf.dispose(out as tf.TensorContainer);
    }
  };
  const reference = interpret(p.ir, inputs, clients === undefined ? {} : { clients }) as Record<string, OutputLeaf>;
  const result = { reference, cpu: await onBackend("cpu"), wasm: await onBackend("wasm"), onnx: await onBackend("onnx") };
  await p.dispose();
  return result;
}

/** Every path gives these entries for each named output (relative 1e-5, so that log1p(1e-8) = 0 fails; absolute 1e-12 at 0). */
async function expectAllPaths(p: Program<unknown, unknown>, inputs: InputTree, expected: Record<string, readonly number[]>, clients?: number): Promise<void> {
  const outputs = await allPaths(p, inputs, clients);
  for (const [path, record] of Object.entries(outputs)) {
    for (const [name, want] of Object.entries(expected)) {
      const got = Array.from(record[name]!.data);
      expect(got.length, `${path} ${name} size`).toBe(want.length);
      got.forEach((v, i) => {
        const w = want[i]!;
        if (!Number.isFinite(w)) expect(v, `${path} ${name}[${i}]`).toBe(w);
        else expect(Math.abs(v - w), `${path} ${name}[${i}]: ${v} vs ${w}`).toBeLessThanOrEqual(1e-12 + 1e-5 * Math.abs(w));
      });
    }
  }
}

describe("values on every path", () => {
  test("log1p keeps the digits of tiny x; floor; round takes halves to the even integer", async () => {
    const p = program({ x: atServer(f32([6])), h: atServer(f32([8])) }, ({ x, h }) => ({ log1p: log1p(x), floor: floor(h), round: round(h) }));
    const x = [1e-8, -1e-7, 0.5, 3, -0.5, 1e30];
    const h = [0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 2.2, -3];
    await expectAllPaths(p, { x, h }, {
      // log1p(1e-8) = 1e-8 - 5e-17: log(1 + 1e-8) in float32 would be 0.
      log1p: x.map(Math.log1p),
      floor: [0, 1, 2, -1, -2, -3, 2, -3],
      round: [0, 2, 2, -0, -2, -3, 2, -3],
    });
  });

  test("mod has the sign of the divisor, f32 and i32 (an i32 a mod 0 is a)", async () => {
    const p = program({ a: atServer(f32([6])), b: atServer(f32([6])), m: atServer(i32([6])), n: atServer(i32([6])) }, ({ a, b, m, n }) => ({
      float: mod(a, b),
      int: mod(m, n),
      // A plain number takes the other operand's dtype.
      byThree: mod(m, 3),
    }));
    await expectAllPaths(p, { a: [5.5, -5.5, 5.5, -5.5, 6, 0.75], b: [2, 2, -2, -2, 3, 0.5], m: [7, -7, 7, -7, 5, 0], n: [3, 3, -3, -3, 0, 4] }, {
      float: [1.5, 0.5, -0.5, -1.5, 0, 0.25],
      int: [1, 2, -2, -1, 5, 0],
      byThree: [1, 2, 1, 2, 2, 0],
    });
  });

  // The int32 form under client batching, members of rank 6 (rank 7 with the clients), a zero divisor at one client.
  test("i32 mod of rank-6 members inside map, by a per-client divisor", async () => {
    const p = program({ k: atClients(i32([1, 1, 1, 1, 1, 2])), d: atClients(i32([])) }, ({ k, d }) => ({ out: map((m, q) => mod(m, q), k, d) }));
    await expectAllPaths(p, { k: [[[[[[[7, -7]]]]]], [[[[[[5, 9]]]]]]], d: [3, 0] }, { out: [1, 2, 5, 9] }, 2);
  });

  test("mod of f32 by 0 is NaN", async () => {
    const p = program({ a: atServer(f32([2])) }, ({ a }) => ({ out: mod(a, 0) }));
    await expectAllPaths(p, { a: [1, -2] }, { out: [NaN, NaN] });
  });

  test("argmin takes the first minimum, f32 and i32 (the smallest int32 included)", async () => {
    const p = program({ x: atServer(f32([2, 4])), k: atServer(i32([4])) }, ({ x, k }) => ({ rows: argmin(x), columns: argmin(x, 0), ints: argmin(k) }));
    await expectAllPaths(p, { x: [[3, -1, -1, 2], [0, 5, -4, -4]], k: [5, -2147483648, 7, -2147483648] }, { rows: [1, 2], columns: [1, 0, 1, 1], ints: [1] });
  });

  test("square, softplus (no overflow at large |x|), norm of each order, squaredDistance", async () => {
    const p = program({ x: atServer(f32([2, 3])), y: atServer(f32([3])), big: atServer(f32([3])) }, ({ x, y, big }) => ({
      square: square(x),
      softplus: softplus(big),
      l2: norm(x),
      l2rows: norm(x, { axis: -1 }),
      l1rows: norm(x, { ord: 1, axis: 1, keepDims: true }),
      linf: norm(x, { ord: Infinity }),
      distance: squaredDistance(x, y, -1),
      total: squaredDistance(x, y),
    }));
    const softplusOf = (v: number) => Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v)));
    await expectAllPaths(p, { x: [[3, -4, 0], [1, 2, -2]], y: [1, 0, 1], big: [100, -30, 0] }, {
      square: [9, 16, 0, 1, 4, 4],
      softplus: [100, softplusOf(-30), Math.log(2)],
      l2: [Math.sqrt(34)],
      l2rows: [5, 3],
      l1rows: [7, 5],
      linf: [4],
      // (3-1)^2 + 16 + 1 = 21; 0 + 4 + 9 = 13.
      distance: [21, 13],
      total: [34],
    });
  });

  test("the losses per example, also at the CLIENTS inside map", async () => {
    const p = program({ logits: atClients(f32([2, 2])), labels: atClients(f32([2, 2])), probs: atClients(f32([2, 2])) }, ({ logits, labels, probs }) => ({
      sigmoid: map((l, z) => sigmoidCrossEntropy(l, z), logits, labels),
      binary: binaryCrossEntropy(probs, labels),
    }));
    const bce = (q: number, z: number) => {
      const c = Math.min(Math.max(q, 1e-7), 1 - 1e-7);
      return -(z * Math.log(c) + (1 - z) * Math.log(1 - c));
    };
    const logits = [[[2, -30], [0, 40]], [[-1, 1], [0.5, -0.5]]];
    const labels = [[[1, 0], [1, 0]], [[0, 1], [0.25, 0.75]]];
    const probs = [[[0.9, 0], [1, 0.5]], [[0.2, 0.7], [0.25, 0.75]]];
    const perExample = (f: (a: number, z: number) => number, xs: number[][][]) =>
      xs.flatMap((client, c) => client.map((row, r) => row.reduce((s, v, j) => s + f(v, labels[c]![r]![j]!), 0) / row.length));
    await expectAllPaths(p, { logits, labels, probs }, {
      // At logit 40 and label 0 the loss is 40 (log(1 + e^40)), not infinity.
      // -z log(sigmoid(v)) - (1 - z) log(1 - sigmoid(v)), written with log(sigmoid(v)) = -log1p(e^-v), so that float64 keeps it finite.
      sigmoid: perExample((v, z) => z * Math.log1p(Math.exp(-v)) + (1 - z) * (v + Math.log1p(Math.exp(-v))), logits),
      binary: perExample(bce, probs),
    }, 2);
  });
});

describe("gradients on every path", () => {
  test("softplus' is sigmoid (1/2 at 0), log1p' is 1/(1+x), floor' and round' are 0, square' is 2x", async () => {
    const p = program({ x: atServer(f32([4])) }, ({ x }) => ({
      softplus: grad((q: typeof x) => sum(softplus(q)))(x),
      log1p: grad((q: typeof x) => sum(log1p(q)))(x),
      steps: grad((q: typeof x) => sum(floor(q)))(x),
      rounds: grad((q: typeof x) => sum(round(q)))(x),
      square: grad((q: typeof x) => sum(square(q)))(x),
    }));
    const x = [0, 2, -3, 0.5];
    await expectAllPaths(p, { x }, {
      softplus: x.map((v) => 1 / (1 + Math.exp(-v))),
      log1p: x.map((v) => 1 / (1 + v)),
      steps: [0, 0, 0, 0],
      rounds: [0, 0, 0, 0],
      square: x.map((v) => 2 * v),
    });
  });

  test("mod: d/da = 1, d/db = -floor(a / b)", async () => {
    const p = program({ a: atServer(f32([3])), b: atServer(f32([3])) }, ({ a, b }) => ({
      da: grad((q: typeof a) => sum(mod(q, b)))(a),
      db: grad((q: typeof b) => sum(mod(a, q)))(b),
    }));
    // floor(5.5 / 2) = 2, floor(-5.5 / 2) = -3, floor(5.5 / -2) = -3.
    await expectAllPaths(p, { a: [5.5, -5.5, 5.5], b: [2, 2, -2] }, { da: [1, 1, 1], db: [-2, 3, 3] });
  });

  test("norm' is x / norm (ord 2), sign(x) (ord 1); squaredDistance' is 2 (a - b), 0 where a = b", async () => {
    const p = program({ x: atServer(f32([3])), y: atServer(f32([3])) }, ({ x, y }) => ({
      l2: grad((q: typeof x) => norm(q))(x),
      l1: grad((q: typeof x) => norm(q, { ord: 1 }))(x),
      distance: grad((q: typeof x) => squaredDistance(q, y))(x),
    }));
    await expectAllPaths(p, { x: [3, -4, 1], y: [1, 0, 1] }, {
      l2: [3, -4, 1].map((v) => v / Math.sqrt(26)),
      l1: [1, -1, 1],
      distance: [4, -8, 0],
    });
  });

  test("sigmoidCrossEntropy' is (sigmoid(x) - z) / n; binaryCrossEntropy' is (p - z) / (p (1 - p) n)", async () => {
    const p = program({ x: atServer(f32([1, 4])), z: atServer(f32([1, 4])), q: atServer(f32([1, 4])) }, ({ x, z, q }) => ({
      logits: grad((l: typeof x) => sum(sigmoidCrossEntropy(l, z)))(x),
      probs: grad((r: typeof q) => sum(binaryCrossEntropy(r, z)))(q),
    }));
    const x = [0, 3, -2, 50];
    const z = [1, 0, 0.5, 1];
    const q = [0.5, 0.8, 0.1, 0.99];
    await expectAllPaths(p, { x: [x], z: [z], q: [q] }, {
      logits: x.map((v, i) => (1 / (1 + Math.exp(-v)) - z[i]!) / 4),
      probs: q.map((v, i) => (v - z[i]!) / (v * (1 - v) * 4)),
    });
  });
});
